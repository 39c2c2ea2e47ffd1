// Package rank computes PageRank across the ring: a distributed power
// iteration in which each node holds the out-links of the pages it owns
// and sends rank to the owners of their targets.
//
// A run has an id, a crawl day, a damping factor and a stopping rule
// (a fixed number of iterations, or an L1 change below a tolerance). One
// node coordinates it (Coordinator.Run) and every member runs an Engine:
//
//  1. prepare: each Engine reads the out-links of the pages it owns as of
//     the day (Engine.Graph), drops self-links, and registers every
//     target with its owner (op "register", URLs sorted by key, one
//     ring lookup per run of keys one owner holds); the owner numbers
//     the URLs it holds, so later messages carry 4-byte indices, not URLs;
//  2. count: each Engine freezes its vertices and reports how many;
//     the coordinator sums N;
//  3. step k: each Engine applies the contributions of step k-1,
//     r(v) = (1-d)/N + d·(D/N + Σ in(v)), with D the rank held by pages
//     without out-links (dangling) in step k-1 — gonum's handling of
//     dangling mass and damping (graph/network.PageRank) — then sends
//     r(u)/outdeg(u) along its out-links, summed per target at the
//     sender, one "contrib" message per member it links into, and
//     answers with its dangling mass and L1 change once every
//     contribution was acknowledged;
//  4. finish: each Engine applies the last step and stores its ranks
//     (Store, by day and URL).
//
// Contributions carry their step: step k's arrive in a buffer of their
// own (k mod 2), and the coordinator starts step k+1 only when every
// member acknowledged step k, so no step's contributions mix with
// another's.
//
// A run assumes a settled ring: a URL keeps, for the whole run, the
// vertex its registration got at the owner a lookup found then, even if
// its owner changes before the run finishes; a member that fails fails
// the run.
//
// Bounds: a run lives in memory, so an Engine refuses one whose graph
// and registered vertices would count more than MaxBytes (PageBytes,
// ErrTooLarge); it prepares one run at a time, and another member's
// prepare, which reads every page the node owns, at most once every
// PrepareGap (HandleRemote, ErrBusy).
//
// Concurrency: an Engine and a Store are safe for concurrent use; an
// Engine takes part in one run at a time (a new run replaces the old).
package rank
