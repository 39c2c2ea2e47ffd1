// Package gatewaytest holds the shared test suite for implementations of
// gateway.Archive (and gateway.Lister when they offer it), and Mem, an
// in-memory reference implementation.
//
// The node runs TestArchive against its ring-routing archive so that the
// gateway can rely on one contract: versions oldest first, "newest not newer
// than t, else the oldest", archive.ErrNotFound for unknown URLs, and
// listings ordered by URL and time. Mem is checked against the same suite in
// this package's tests.
//
// Its own tests replay through a real gateway: the sample web's day 0
// (every reference stays in the archive, in headless Chromium too), a
// hostile site whose pages attack the gateway, its operator and the live
// web (TestAttackPages, testdata/hostile), the UI origin's service worker
// in Chromium (TestFramedPageByWorker), and what framing costs against a
// single-origin gateway: per view in the gateway (BenchmarkFramingCost)
// and to a reader in Chromium over links with a round-trip time
// (TestReplayLatency, HEROD_REPLAY_LATENCY=1). BenchmarkReplayView, a
// reader's view of a page, is what scripts/bench-replay.sh runs against
// an older commit.
//
// Everything here is safe for concurrent use; the suite itself runs its
// checks sequentially.
package gatewaytest
