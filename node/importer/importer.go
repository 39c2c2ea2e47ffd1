package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Store is what an Importer needs of this node's archive.
type Store interface {
	EncodeImported(c archive.Capture) ([]byte, error)
	AddImported(ctx context.Context, data []byte, sender string, admit func(archive.Version) error) (archive.Version, bool, error)
}

var _ Store = (*archive.Store)(nil)

// Owner is the holder a record goes to: this node (Self) or the peer
// behind Contact, named by Peer.
type Owner struct {
	Self bool
	Peer string // the owner's peer id
	Addr any    // what Config.Send needs to reach it
	// ID, when not zero, is the owning virtual server's id: it owns
	// every key from the one looked up to ID, which send then routes
	// without another look-up.
	ID id.ID
}

// Config wires an Importer.
type Config struct {
	Store Store
	// Route returns the owner of key by the ring.
	Route func(ctx context.Context, key id.ID) (Owner, error)
	// Send offers records to another node's import service (Client.Send)
	// and returns one Result per record.
	Send func(ctx context.Context, o Owner, recs [][]byte) ([]Result, error)
	// Admit checks, on this node as on any owner, that a record it is
	// about to store is its own to store (Admit).
	Admit func(archive.Version) error
	// Dir holds the journals, one per source file's SHA-256.
	Dir    string
	Logger *slog.Logger
}

// Importer imports source files into the ring. It is safe for
// concurrent use; one file is imported by one call at a time (two calls
// on the same file share its journal and may each send its records:
// the owners store them once).
type Importer struct {
	cfg Config
}

// New returns an Importer.
func New(cfg Config) *Importer { return &Importer{cfg: cfg} }

// Report says what an import did. Records counts the records read this
// time (resumed ones included); Added the versions owners stored anew,
// Held those they had already (same URL, date and payload: no byte
// stored), Skipped the records not imported by design, Damaged those
// that could not be, Refused those an owner refused.
type Report struct {
	File    string        `json:"file"`
	SHA256  string        `json:"sha256"`
	Records int           `json:"records"`
	Resumed int           `json:"resumed,omitempty"` // records done by an earlier, interrupted import
	Added   int           `json:"added"`
	Held    int           `json:"held"`
	Skipped int           `json:"skipped"`
	Damaged int           `json:"damaged"`
	Refused int           `json:"refused"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// RecordError names a record that was not imported and why.
type RecordError struct {
	Where string `json:"where"` // its place in the file
	ID    string `json:"id,omitempty"`
	URL   string `json:"url,omitempty"`
	Err   string `json:"error"`
}

// Batch bounds: a batch goes out at batchRecords records or batchBytes
// bytes, and the journal moves after each.
const (
	batchRecords = 256
	batchBytes   = 8 << 20
)

// pending is a record encoded and on its way to its owner.
type pending struct {
	key  id.ID
	data []byte
	err  RecordError // its names, for an error
}

// File imports the source file at path (name is what reports call it):
// every response, resource and revisit record goes to its URL's owner.
// Records an earlier call on the same file (by its SHA-256) settled are
// read but not sent again. Each record not imported is passed to bad as
// it is found. An error returned means the import stopped (the ring or
// the disk failed): calling File again resumes it.
func (im *Importer) File(ctx context.Context, path, name string, bad func(RecordError)) (Report, error) {
	start := time.Now()
	rep := Report{File: name}
	sum, err := fileSHA256(path)
	if err != nil {
		return rep, fmt.Errorf("import %s: %w", name, err)
	}
	rep.SHA256 = sum
	j, err := openJournal(im.cfg.Dir, sum)
	if err != nil {
		return rep, fmt.Errorf("import %s: %w", name, err)
	}
	cv := &converter{source: "sha256:" + sum}
	var batch []pending
	var size, n int
	flush := func() error {
		if len(batch) > 0 {
			if err := im.send(ctx, batch, &rep, bad); err != nil {
				return err
			}
		}
		batch, size = batch[:0], 0
		if n > j.Done {
			j.Done = n
			return j.save()
		}
		return nil
	}
	err = eachFile(path, func(it item) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		rep.Records++
		c, err := cv.convert(it)
		if n <= j.Done {
			rep.Resumed++
			return nil
		}
		re := RecordError{Where: it.where, ID: it.id, URL: it.url}
		if it.rec != nil {
			re.ID, re.URL = it.rec.Header.Get("Warc-Record-Id"), it.rec.Header.Get("Warc-Target-Uri")
		} else if it.arc != nil {
			re.URL = it.arc.URL
		}
		if err == nil {
			var data []byte
			if data, err = im.cfg.Store.EncodeImported(*c); err == nil {
				batch = append(batch, pending{key: id.OfString(c.URL), data: data, err: re})
				size += len(data)
			} else {
				err = fmt.Errorf("%w: %w", errDamaged, err)
			}
		}
		switch {
		case errors.Is(err, errSkip):
			rep.Skipped++
		case err != nil:
			rep.Damaged++
			re.Err = err.Error()
			im.log().Debug("import: record not imported", "file", name, "where", re.Where, "id", re.ID, "err", err)
			if bad != nil {
				bad(re)
			}
		}
		if len(batch) >= batchRecords || size >= batchBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	rep.Elapsed = time.Since(start)
	lvl := slog.LevelInfo
	if err != nil || rep.Damaged+rep.Refused > 0 {
		lvl = slog.LevelWarn
	}
	im.log().Log(ctx, lvl, "import", "file", name, "sha256", sum, "records", rep.Records, "resumed", rep.Resumed, "added", rep.Added,
		"held", rep.Held, "skipped", rep.Skipped, "damaged", rep.Damaged, "refused", rep.Refused, "elapsed", rep.Elapsed, "err", err)
	if err != nil {
		return rep, fmt.Errorf("import %s: %w", name, err)
	}
	j.Complete = true
	if err := j.save(); err != nil {
		return rep, fmt.Errorf("import %s: %w", name, err)
	}
	return rep, nil
}

// notOwnerTries bounds the deliveries of a record its owner refuses as
// not its own (the ring is moving): each after a fresh look-up, the
// k-th after k × notOwnerWait (9 s in all). Past them the import stops,
// to be resumed once the ring has settled.
const (
	notOwnerTries = 10
	notOwnerWait  = 200 * time.Millisecond
)

// send delivers a batch to the owners of its records, again to a fresh
// owner for those refused as not the owner's (the ring moved).
func (im *Importer) send(ctx context.Context, batch []pending, rep *Report, bad func(RecordError)) error {
	left := batch
	for try := 0; try < notOwnerTries && len(left) > 0; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(try) * notOwnerWait):
			}
		}
		groups := map[string][]pending{}
		owners := map[string]Owner{}
		// In key order, one look-up per run of keys one owner holds.
		slices.SortFunc(left, func(a, b pending) int { return a.key.Cmp(b.key) })
		var o Owner
		var from id.ID
		for i, p := range left {
			same := i > 0 && !o.ID.IsZero() && (p.key == from || (from != o.ID && id.InHalfOpen(p.key, from, o.ID)))
			if !same {
				var err error
				if o, err = im.cfg.Route(ctx, p.key); err != nil {
					return fmt.Errorf("route: %w", err)
				}
				from = p.key
			}
			groups[o.Peer] = append(groups[o.Peer], p)
			owners[o.Peer] = o
		}
		left = nil
		for peer, ps := range groups {
			rs, err := im.deliver(ctx, owners[peer], ps)
			if err != nil {
				return err
			}
			for i, r := range rs {
				switch {
				case r.NotOwner && try < notOwnerTries-1:
					left = append(left, ps[i])
				case r.NotOwner:
					return fmt.Errorf("%s: %s refuses it as not its own %d times: the ring is moving; import again once it settles", ps[i].err.Where, peer, notOwnerTries)
				case r.Error != "":
					rep.Refused++
					re := ps[i].err
					re.Err = "refused by " + peer + ": " + r.Error
					im.log().Debug("import: record refused", "where", re.Where, "id", re.ID, "owner", peer, "err", r.Error)
					if bad != nil {
						bad(re)
					}
				case r.Added:
					rep.Added++
				default:
					rep.Held++
				}
			}
		}
	}
	return nil
}

// deliver hands ps to o: this node's store, or o's import service.
func (im *Importer) deliver(ctx context.Context, o Owner, ps []pending) ([]Result, error) {
	if !o.Self {
		recs := make([][]byte, len(ps))
		for i, p := range ps {
			recs[i] = p.data
		}
		rs, err := im.cfg.Send(ctx, o, recs)
		if err == nil && len(rs) != len(ps) {
			err = fmt.Errorf("%d results for %d records", len(rs), len(ps))
		}
		if err != nil {
			return nil, fmt.Errorf("send to %s: %w", o.Peer, err)
		}
		return rs, nil
	}
	rs := make([]Result, len(ps))
	for i, p := range ps {
		rs[i] = add(ctx, im.cfg.Store, p.data, "", im.cfg.Admit)
		if rs[i].err != nil {
			return nil, fmt.Errorf("store: %w", rs[i].err)
		}
	}
	return rs, nil
}

func (im *Importer) log() *slog.Logger {
	if im.cfg.Logger != nil {
		return im.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
