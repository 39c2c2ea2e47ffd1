// Package status is a node's state as /api/status and `herod status` show
// it (Status, with the counters of every layer the node wires) and as
// /metrics exports it to Prometheus (Collector: the herod_* metrics, read
// from a Status once per scrape).
//
// The node fills a Status from its parts (node/status.go) and registers
// a Collector beside the Go runtime's, the crawler's herod_crawl_* and
// libp2p's own collectors (node/metrics.go). Status's JSON field names
// and the metric names and help texts are an interface: operators'
// scripts and dashboards read them.
//
// Concurrency: a Collector is safe for concurrent use if its Status and
// Caps functions are.
package status
