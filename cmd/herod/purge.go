package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/node"
)

// purgeCmd removes from a stopped node's archive every version signed by
// one peer and makes the node refuse that peer's versions from then on
// (archive.Purge).
func purgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("purge", "purge --data DIR --peer ID", stderr)
	home, _ := os.UserHomeDir()
	data := fs.String("data", filepath.Join(home, ".herod"), "data directory of the node (the node must be stopped)")
	who := fs.String("peer", "", "libp2p peer id whose signed versions are removed and refused from now on")
	day := fs.Duration("day", node.DefaultDayLength, "crawl day length the node runs with")
	verbose := fs.Bool("v", false, "verbose logs")
	if err := parse(fs, args); err != nil {
		return err
	}
	if _, err := peer.Decode(*who); err != nil {
		return fmt.Errorf("--peer %q: not a peer id: %w", *who, err)
	}
	dir := filepath.Join(*data, "archive")
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("--data %s: no archive: %w", *data, err)
	}
	rep, err := archive.Purge(ctx, dir, *who, archive.Options{DayLength: *day, Logger: logger(stderr, *verbose)})
	if err != nil {
		return fmt.Errorf("%w (is the node still running?)", err)
	}
	fmt.Fprintf(stdout, "purge %s: %d versions removed from the index, peer refused from now on\n", *who, rep.Purged)
	return nil
}
