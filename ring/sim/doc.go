// Package sim runs the real ring code (package ring) over the in-memory
// network (ring/memnet) at sizes one machine can hold, and measures what
// issue 3 asks: lookup hops, load balance, recovery from mass failure,
// lookups under churn, and ring merging after a partition. RunFetch
// models one crawl day on a ring that forms while it crawls, with the
// real claim code (ring/claim), and counts the pages fetched twice or
// never (issue 17). RunSearch measures what a full-text query costs
// on the ring (issue 38): hops and bytes a query, by number of terms.
//
// A Sim is a set of ring.Ring nodes on one memnet.Network with a fake
// clock, driven round by round from a single goroutine: every live node
// runs one Maintain per round, in a seeded random order. A run is a
// deterministic function of its Config (same seed, same numbers). Rings
// are built by doubling: the nodes present are joined by as many new
// nodes through random members, then rounds run until
// ringtest.Consistent holds; finally every finger table is filled.
// Lookups are checked against ground truth: the true successor of the
// key among the live virtual servers.
//
// Hops are remote lookup steps that answered (the node starting the
// lookup answers its own first step from its tables; the owner's
// liveness ping is counted in msgs/lookup, not in hops). A real node
// answers a step from the union of its virtual servers' tables, which is
// why rings with 4 virtual servers per node need fewer hops.
//
// Load balance is computed from the placement rule itself: VirtualID
// positions, keys SHA-1("key-i") assigned to their successor. With
// ChooseIndexes the nodes join one after another and each runs the
// indexes ring.PickIndexes selects among the 64 allowed, against the
// exact ring at that moment (what ring.Config.ChooseIndexes does through
// lookups).
//
// The search model (search.go, corpus.go) draws query terms by frequency
// from a Zipf model of analyzed text and sizes each term's postings by
// the pages that hold it; it runs a query from a random node as
// node/search and search.Engine run it — each term's owner looked up
// (unless a local virtual server owns it) and the walk to its other
// holders, one lookup a step, two holders asked, a term whose list was
// cut asked again for the candidates' keys — then fetches the first
// results' captures as node/resolve does (a lookup of the URL key, one
// request to the owner). Lookups are the real ring's; their bytes are
// the ring messages counted by WireCounter; the search messages are
// sized by a SearchWire, which the test builds from node/search's and
// node/resolve's own message types and archive.EncodeRecord. Terms
// occur independently, so two rare terms seldom meet.
//
// # Reproduce
//
//	go test ./ring/sim -run TestSim -v -sim -timeout 30m   # full scale, ~4 min on 2 cores
//	go test ./ring/sim                                     # small scale, seconds, same checks
//	go test ./ring/sim -run XXX -bench Lookup -benchtime 5000x
//	HEROD_SIM_FETCH_RUNS=150 go test ./ring/sim -run TestFetchOncePerDay -v
//	go test ./ring/sim -run TestSearchCost -v -sim -timeout 60m  # search at 100 and 1,000 nodes; figures in docs/search.md
//
// # Results (FullScale, seed 1)
//
// Lookup hops (remote steps per lookup; 5000 random keys from random nodes):
//
//	| virtual servers | per real node | mean hops | p99 | max | target mean ≤ ½·log2 N + 1 | msgs/lookup | correct |
//	|---|---|---|---|---|---|---|---|
//	| 1000 | 1 | 4.27 | 7 | 8 | 5.98 | 5.27 | 100.00% |
//	| 1000 | 4 | 2.90 | 5 | 7 | 5.98 | 3.89 | 100.00% |
//	| 10000 | 1 | 5.94 | 10 | 10 | 7.64 | 6.94 | 100.00% |
//	| 10000 | 4 | 4.47 | 7 | 9 | 7.64 | 5.46 | 100.00% |
//
// Keys per real node over the mean (1000 real nodes, 1000000 keys):
//
//	| virtual servers per node | indexes | max/mean | p99/mean | p1/mean |
//	|---|---|---|---|---|
//	| 1 | 0..V-1 | 7.56 | 4.55 | 0.01 |
//	| 4 | 0..V-1 | 3.31 | 2.56 | 0.21 |
//	| 16 | 0..V-1 | 2.16 | 1.73 | 0.50 |
//	| 64 | 0..V-1 | 1.56 | 1.35 | 0.74 |
//	| 1 | best V of 64 (ChooseIndexes) | 1.86 | 1.57 | 0.57 |
//	| 4 | best V of 64 (ChooseIndexes) | 1.53 | 1.39 | 0.65 |
//	| 16 | best V of 64 (ChooseIndexes) | 1.52 | 1.36 | 0.65 |
//	| 64 | best V of 64 (ChooseIndexes) | 1.56 | 1.35 | 0.74 |
//
// Failures, churn, partition (1000 virtual servers, 4 per real node):
//
//	| scenario | result |
//	|---|---|
//	| 125 of 250 real nodes crash at once: correct live owner, before any stabilization | 99.84% (8 failed) |
//	| same, rounds until one consistent ring | 7 |
//	| same, correct live owner after stabilization | 100.00% |
//	| churn: 1% of real nodes crash and as many join every round, 50 rounds: lookup success | 100.00% (5000 lookups, 0 failed) |
//	| churn: 5% of real nodes crash and as many join every round, 50 rounds: lookup success | 99.96% (5000 lookups, 0 failed) |
//	| 5% of messages lost, 50 rounds: lookup success | 99.92% (5000 lookups, 0 failed) |
//	| same, rounds after the loss stops until one consistent ring | 0 |
//	| partition into two halves: rounds until each half is a ring | 7 |
//	| partition healed: rounds until one consistent ring | 13 |
//
// Targets: mean hops ≤ ½·log2 N + 1 (met at every size); max/mean keys
// per real node ≤ 2 with 16 virtual servers (met with ChooseIndexes:
// 1.52; not met with fixed indexes 0..15: 2.16, p99 1.73 — the Chord
// paper's figure is p99 1.6 with 20); 100% correct live owners after a
// half crash and stabilization (met); ≥ 99% lookup success under churn
// (met, also at 5% churn per round and with 5% of messages lost); a
// partition into two halves and its healing are repaired in 7 and 13
// rounds. Total run time 3m26s on a shared 2-core machine.
package sim
