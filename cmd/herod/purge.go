package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// purgeCmd removes from a node's archive every version signed by one peer
// and makes the node refuse that peer from then on: on a running node
// through its admin API (--node; the node also orders the purge
// ring-wide, node.Node.Purge), or on a stopped node's data directory
// (archive.Purge).
func purgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("purge", "purge [--node URL | --offline] [--data DIR] --peer ID", stderr)
	data := fs.String("data", defaultDataDir(), "data directory of the node: its admin token, or, with --offline, its archive (the node stopped)")
	nodeURL := fs.String("node", defaultNode, "gateway URL of the running node")
	offline := fs.Bool("offline", false, "purge the stopped node's archive in --data directly (this node only; no order to the ring)")
	who := fs.String("peer", "", "libp2p peer id whose signed versions are removed and refused from now on")
	var dayLen time.Duration
	durationVar(fs, &dayLen, "day", node.DefaultDayLength, "crawl day length the node runs with (--offline)")
	day := &dayLen
	verbose := fs.Bool("v", false, "verbose logs")
	if err := parse(fs, args); err != nil {
		return err
	}
	if _, err := peer.Decode(*who); err != nil {
		return fmt.Errorf("--peer %q: not a peer id: %w", *who, err)
	}
	if !*offline {
		err := purgeRunning(ctx, *nodeURL, *data, *who, stdout)
		nodeSet := false
		fs.Visit(func(f *flag.Flag) { nodeSet = nodeSet || f.Name == "node" })
		if !errors.Is(err, errNoNode) || nodeSet {
			return err
		}
		// No node at the default address: the stopped node's archive
		// (archive.Purge refuses an archive a running node holds open).
		fmt.Fprintf(stderr, "no node answers at %s: purging the archive in %s offline\n", *nodeURL, *data)
	}
	dir := filepath.Join(*data, "archive")
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("--data %s: no archive: %w", *data, err)
	}
	rep, err := archive.Purge(ctx, dir, *who, archive.Options{DayLength: *day, Logger: logger(stderr, *verbose)})
	if err != nil {
		return fmt.Errorf("%w (is the node still running? then purge without --offline)", err)
	}
	fmt.Fprintf(stdout, "purge %s: %d versions removed from the index, peer refused from now on\n", *who, rep.Purged)
	return nil
}

// errNoNode reports that no running node answers for the data directory.
var errNoNode = errors.New("no running node")

// purgeRunning asks the running node at nodeURL, with the admin token in
// data, to purge peer (POST /api/purge).
func purgeRunning(ctx context.Context, nodeURL, data, who string, stdout io.Writer) error {
	token, err := gateway.ReadAdminToken(data)
	if err != nil {
		return fmt.Errorf("purge: %w (pass the node's --data, or --offline for a stopped node): %w", err, errNoNode)
	}
	ep, err := endpoint(nodeURL, "/api/purge")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, strings.NewReader(who))
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+token)
	// A purge scans the node's whole archive: no client timeout.
	resp, err := (&http.Client{Transport: httpClient.Transport}).Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		err = fmt.Errorf("%w: %w", errNoNode, err)
	}
	if err != nil {
		return fmt.Errorf("purge: %w (is the node running? --offline purges a stopped one)", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("purge: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var rep struct {
		Versions int `json:"versions"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		return fmt.Errorf("purge: reply %q: %w", body, err)
	}
	fmt.Fprintf(stdout, "purge %s: %d versions removed from the running node, peer refused from now on; "+
		"the order goes to the ring (carried out by nodes that list this one with --purge-authority)\n", who, rep.Versions)
	return nil
}
