package node

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/node/replication"
)

// replicateProtocol carries replicate's requests (package replication).
const replicateProtocol = replication.Protocol

// Replication defaults (package replication).
const (
	// ReplicationFactor is the default k (Config.Replicas): every key is
	// held by its owner and by the next k-1 distinct real nodes clockwise,
	// so any k-1 real nodes may die at once without losing a file.
	ReplicationFactor = replication.Factor
	// DefaultReplicationInterval is the period of replication rounds;
	// tests shorten it with Node.SetReplicationInterval.
	DefaultReplicationInterval = replication.DefaultInterval
	// ReplicationSettle is how long after the last change of a local
	// virtual server's range or successors a round runs, if sooner than
	// the next periodic one.
	ReplicationSettle = replication.Settle
	// ReplicationPushDelay bounds how long a version this node stores, or
	// a URL it learns, waits before it is pushed to its range's holders.
	ReplicationPushDelay = replication.PushDelay
	// DefaultHandOffHold is how long a handed-off record waits, held,
	// for this node's own fetch to confirm it (Config.HandOffHold).
	DefaultHandOffHold = replication.DefaultHoldFor
)

// The crawler waits on the replicator for copies (--write-copies).
var _ crawl.CopyWaiter = (*replication.Replicator)(nil)

// ReplicationStats counts a node's replication work since New
// (replication.Stats).
type ReplicationStats = replication.Stats

// ReplicationHealth tells how far this node's own ranges are from k
// copies, as its last replication round found them (replication.Health).
type ReplicationHealth = replication.Health

// setupReplication builds the node's replicator, with its held area of
// hand-offs (<data>/handoff-held), and registers the replication protocol
// handler. Called from Start (buildCrawl); the loop starts with
// startReplication.
func (n *Node) setupReplication() error {
	held, err := replication.OpenHeld(filepath.Join(n.cfg.DataDir, "handoff-held"),
		replication.HoldLimits{For: n.cfg.HandOffHold}, n.log.With("sub", "hold"))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.repl = replication.New(replication.Config{
		Self:        n.self,
		K:           n.cfg.Replicas,
		Interval:    n.cfg.ReplicationInterval,
		Ring:        n.ring,
		Local:       n.replicaStore(),
		Source:      n.store,
		ReplyBudget: n.replies,
		Dicts:       n.store,
		Open:        n.openStream,
		Gate:        n.gate,
		RefuseRole:  n.refuseRole,
		BadFrame:    n.badFrame,
		ReadReply: func(ctx context.Context, s network.Stream) io.Reader {
			return n.bw.ReplicationReader(ctx, s)
		},
		WriteReply: func(s network.Stream, size int) io.Writer {
			return n.bw.ReplyWriter(s, size, streamTimeout)
		},
		Purge:      n.purgeX,
		ShareKnown: n.links.ShareKnown,
		Paused:     n.storePaused,
		SetRanges:  n.store.SetRanges,
		// Hand-offs wait in the held area until this node's own fetch
		// confirms them (the crawler tells Confirm; buildCrawl).
		Held:  held,
		Check: n.store.CheckImport,
		// The crawler waits for copies of what it stores (crawl.Config.WriteCopies).
		TrackCopies: n.cfg.Crawl.WriteCopies > 1,
		// Rounds hold a replica's captures of URLs this node was crawling
		// (replication guard.go): its ranges' history, across restarts.
		DayLength: n.cfg.DayLength,
		OwnedFile: filepath.Join(n.cfg.DataDir, "owned-ranges"),
		Logger:    n.log,
	})
	n.kit.MustHandle(rawSpec(replicateProtocol, n.repl.Handle, replicateRequest, streamTimeout, 64))
	n.kit.MustHandle(n.repl.DictSpec())
	// Every version this node stores is pushed to its replicas within
	// replication.PushDelay (the loop starts with startReplication).
	n.store.OnAdd(n.versionAdded) // search.go: and to search's indexer
	return nil
}

// startReplication launches the round loop, the pull worker and the push
// loop (New has the crawler report the URLs it learns to it). Called from
// Start.
func (n *Node) startReplication() {
	sub := n.ring.Subscribe(64)
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		n.repl.Push(n.ctx)
	}()
	go func() {
		defer n.wg.Done()
		defer sub.Unsubscribe()
		n.repl.Run(n.ctx, sub.C)
	}()
	go func() {
		defer n.wg.Done()
		n.repl.Work(n.ctx)
	}()
}

// SetReplicationInterval sets the period of replication rounds, effective
// at once; d <= 0 stops rounds (pull requests from owners are still served).
func (n *Node) SetReplicationInterval(d time.Duration) { n.repl.SetInterval(d) }

// ReplicationStats returns a snapshot of the replication counters.
func (n *Node) ReplicationStats() ReplicationStats { return n.repl.Stats() }

// ReplicationIdle reports whether no pull request is queued or being
// served and nothing waits for a push or is being pushed.
func (n *Node) ReplicationIdle() bool { return n.repl.Idle() && n.repl.PushIdle() }

// Replicate runs one replication round now (waiting for a running one to
// finish first) and returns the first error it met; the round goes on past
// errors, which the stats count.
func (n *Node) Replicate(ctx context.Context) error { return n.repl.Round(ctx) }
