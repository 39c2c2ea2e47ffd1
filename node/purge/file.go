package purge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// record is one line of the orders file: an order when it is taken, and
// again with Done once the store has carried it out.
type record struct {
	Order
	Done bool `json:"done,omitempty"`
}

// loadRecords reads the orders file, one record per key (the last one
// written), and cuts off a last line a crash left incomplete; a missing
// file holds none.
func loadRecords(path string) ([]record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	last := map[string]int{} // key -> index in out
	var out []record
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(l, &r); err != nil {
			if i == len(lines)-1 {
				// A line a crash cut short (its order was never carried
				// out): cut it off, so the next record starts a line.
				if err := os.Truncate(path, int64(len(b)-len(l))); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		if j, ok := last[r.key()]; ok {
			out[j] = r
			continue
		}
		last[r.key()] = len(out)
		out = append(out, r)
	}
	return out, nil
}

// appendRecord appends r to the orders file, synced.
func appendRecord(path string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
