// Package claim keeps one fetch per URL and day while the ring's ranges
// move: joins, twin moves, moves for a fairer share, leaves.
//
// A virtual server that takes a range during a day takes it from the
// node that held it (its successor at that moment), and that former owner
// may have fetched some of the range's URLs earlier the same day. The
// day's URL-seen sets stay with the former owner, so without help the new
// owner fetches such a URL again when another page links to it later.
//
// A Claims is one node's record of the day: the URLs it fetched or is
// fetching (mine), those a newer owner claimed from it (away, with the
// claimer at the start of the claim's chain), those a former owner had
// fetched (taken), and, per local virtual server that took its range
// today, that range's former owners (every one of the day: in a forming
// ring a virtual server takes its range again when a node joins in front
// of it or a twin moves). Before fetching a URL of such a range the node
// claims it from each former owner (ToFetch): the
// former owner answers "taken" if it fetched or is fetching the URL today,
// or granted it to another claimer, or took the range today itself and
// its own former owner answers "taken" (the claim follows the chain; past
// MaxHops owners the answer names the next one, Reply.Next, which the
// claimer asks in turn); otherwise it records the URL as claimed away and
// answers "yours" (Answer). Both sides decide under one mutex per node,
// and a node marks a URL as its own just before each fetch, so of two
// nodes that believe they own a URL at once exactly one fetches it.
//
// What it costs: one round trip per URL fetched in a range taken today,
// on that day only; otherwise a map insert per fetch. The sets hold the
// first 8 bytes of each key (about 24 bytes per URL, freed when the day
// changes); two URLs sharing them on one day would make the second count
// as fetched — at a million URLs a day the chance is about 3·10⁻⁸. The
// day's own fetches are held in bounded memory, the most recent
// Config.FetchSetKeys to twice as many (recent.go, at most about 6 MiB);
// an older one is answered from the store's record of the day's fetch
// (Config.History), after the claim chain, if any, was asked. A graceful
// leave hands over only the fetches held, so past that many a day the
// heir fetches the others once more (conditionally).
//
// A former owner that has a virtual server between the URL's key and the
// claimer answers "elsewhere": the claimer's view is behind, and it passes
// the URL on through that former owner (ToFetchVia). So does one whose
// predecessor runs the claimer's virtual-server id on another peer: the
// claimer is the twin that will move. When a claim cannot be answered (no
// reply after Config.Attempts tries), the URL is fetched rather than lost
// for the day: a former owner that is gone cannot fetch it either. A
// former owner that refuses the claim (ErrRefused: its trust gate cannot
// place the claimer yet) is alive and may have fetched the URL, so it is
// asked up to Config.RefusedAttempts times, and one along a chain that
// meets a refusal grants nothing (Reply.Retry). A range that comes back to a node voids the claims made in
// it by nodes that no longer answer (Release); a claimer that answers
// keeps its claims even if it moved the claiming virtual server, since it
// fetched each URL when it was granted (a move hands the day's fetches to
// the range's heir). A chain of former owners that comes back to a node
// that asked along it (Request.Chain) grants nothing there.
//
// The package holds the decisions only; a Transport carries claims (the
// node's is a libp2p protocol, the simulator's a function call), so the
// same code runs on real hosts and in ring/sim. Answering a claim is a
// pure decision (answer.go: decide, from what the node knows at one point
// to the next step) and a small driver (Answer) that reads the day's sets,
// sends the claims along the chain of former owners and asks History.
//
// Concurrency: all methods are safe for concurrent use. No method holds
// the mutex while it calls the Transport or the Ring.
package claim
