// Package replication runs a node's side of replication: it decides
// which ranges it compares with whom and carries package replicate's
// requests over /herod/replicate/1.0.0 (Protocol). Every key is held by
// its owner and the next k-1 distinct real nodes clockwise; each round
// (Run: every Config.Interval, and Settle after a burst of ring changes)
// the owner of each local range pulls it from each replica and, unless
// the two sums were equal, asks the replica to pull it back (an OpPull
// request, which Handle verifies and Work serves). Before any file moves,
// a round exchanges purge orders with the replicas it syncs
// (Config.Purge). Each round records, per local range, whether its k-1
// replicas were in sync and how many versions one lacked (Health in
// Stats).
//
// Between rounds, the push path (push.go) copies every version this node
// stores to its range's k-1 replicas within PushDelay (OpOffer: the
// replica verifies it as it verifies a pull request, then reads and
// imports the records before it answers), records the lag in a histogram,
// and hands the URLs the crawler learns to their ranges' holders
// (Config.ShareKnown); rounds remain the repair path for whatever a push
// misses. Records a full push queue drops are repaired once the replica's
// queue drains, by a pull request of their range. A record this node
// holds outside its roles (stored outside its ranges, or kept from a role
// it lost) is handed to its owner (OpHandOff, handoff.go): by the push at
// once, and by the sweeps of rounds, so that it reaches its k holders
// although no round compares this node with them. The owner keeps a
// record handed to it in its held area (Held, hold.go), shown, witnessed
// and pushed by nothing, until its own fetch of the URL finds the same
// payload (Confirm); unconfirmed past HoldLimits.For it is dropped.
// Rounds hold the same way a replica's record fetched by another node
// at a time this node was up and owned its key (guard.go; the history
// of its ranges, owned.go, kept in Config.OwnedFile across restarts):
// an honest replica fetches its owner's URLs only while the owner is not
// crawling them. With Config.TrackCopies the push remembers which replicas
// confirmed each record, so that WaitCopies tells the crawler when a
// version has its --write-copies copies (acks.go).
//
// Replicas store records as their senders stored them; the
// dictionaries of zstd records travel on /herod/dict/1.0.0 (DictProtocol,
// dict.go): a node fetches one it lacks once from the sender, verified by
// its hash, and serves its own and those its replicas use.
//
// The node supplies the streams, the trust gate, the stores and its
// bandwidth caps (node/replicate.go); package replicate is the sync
// algorithm.
//
// Invariants: nothing is ever deleted, a sync only pulls; a pull request
// is queued only from the member that runs the range's virtual server,
// for its own range or a part of it, and only on a node that replicates
// that range (refusals wrap ErrRole, go to Config.RefuseRole and are
// counted in Stats.Refused); at most 256 pull requests wait, and a
// repeated one is queued once; one round runs at a time.
//
// Concurrency: a Replicator is safe for concurrent use; Run, Work and
// Push each run in one goroutine; Notify and NotifyKnown never block.
package replication
