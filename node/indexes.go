package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// indexesFile records which virtual-server indexes the node runs. A node
// that chose its indexes when it first joined (ring.Config.ChooseIndexes)
// must come back at the same positions after a restart, or the URLs it
// stores would belong to someone else.
const indexesFile = "vservers.json"

type savedIndexes struct {
	Indexes []int `json:"indexes"`
}

// loadIndexes returns the indexes saved in dir, nil if none are saved or
// their number differs from want (the operator changed --vnodes: the node
// then chooses anew).
func loadIndexes(dir string, want int) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("virtual-server indexes: %w", err)
	}
	var s savedIndexes
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("virtual-server indexes %s: %w", indexesFile, err)
	}
	if len(s.Indexes) != want {
		return nil, nil
	}
	return s.Indexes, nil
}

// saveIndexes records the ring's current indexes in dir.
func saveIndexes(dir string, idx []int) error {
	b, err := json.Marshal(savedIndexes{Indexes: idx})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, indexesFile), b, 0o644); err != nil {
		return fmt.Errorf("virtual-server indexes: %w", err)
	}
	return nil
}
