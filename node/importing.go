package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/importer"
	"github.com/herod-archive/herod/ring"
)

// importDir holds, in the data directory, the journals of imports
// (journal/) and the files being uploaded for one (spool-*).
const importDir = "import"

// setupImport builds the node's importer and registers the import
// protocol. Called from Start once the ring exists.
func (n *Node) setupImport() {
	// Owned by local knowledge, or by the range last known while a
	// predecessor is being replaced (ring.OwnsLastKnown).
	admit := importer.Admit(func(k id.ID) bool { return n.ring.Owns(k) || n.ring.OwnsLastKnown(k) }, time.Now)
	cl := &importer.Client{Open: func(ctx context.Context, o importer.Owner, p protocol.ID) (network.Stream, error) {
		c, ok := o.Addr.(ring.Contact)
		if !ok {
			return nil, errors.New("node import: owner without a contact")
		}
		return n.openStream(ctx, c, p)
	}}
	n.imp = importer.New(importer.Config{
		Store: n.store,
		Route: func(ctx context.Context, key id.ID) (importer.Owner, error) {
			nodes, err := n.ring.Successors(ctx, key, 1)
			if err != nil {
				return importer.Owner{}, err
			}
			if len(nodes) == 0 {
				return importer.Owner{}, errors.New("no owner found")
			}
			c := nodes[0].Contact
			return importer.Owner{Self: c.Peer == n.self.Peer, Peer: c.Peer, Addr: c, ID: nodes[0].ID}, nil
		},
		Send:   cl.Send,
		Admit:  admit,
		Dir:    filepath.Join(n.cfg.DataDir, importDir, "journal"),
		Logger: n.log.With("sub", "import"),
	})
	n.kit.MustHandle((&importer.Server{Store: n.store, Admit: admit}).Spec())
}

// ImportFile imports the source file at path (a WARC, WACZ or ARC file)
// into the ring: see package importer. Each record not imported is
// passed to bad.
func (n *Node) ImportFile(ctx context.Context, path, name string, bad func(importer.RecordError)) (importer.Report, error) {
	if n.imp == nil {
		return importer.Report{}, errors.New("node import: the node is not started")
	}
	return n.imp.File(ctx, path, name, bad)
}

// ImportUpload is the gateway's Config.Import: it keeps body, a file
// uploaded by the operator, in the data directory while it imports it
// (ImportFile), passing each record not imported to emit and returning
// the report.
func (n *Node) ImportUpload(ctx context.Context, name string, body io.Reader, emit func(any)) (any, error) {
	dir := filepath.Join(n.cfg.DataDir, importDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("node import: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	p := filepath.Join(dir, "spool-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node import: %w", err)
	}
	defer os.Remove(p)
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("node import: upload: %w", err)
	}
	rep, err := n.ImportFile(ctx, p, name, func(re importer.RecordError) { emit(re) })
	if err != nil {
		return nil, err
	}
	return rep, nil
}
