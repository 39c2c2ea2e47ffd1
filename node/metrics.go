package node

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/buildinfo"
	"github.com/herod-archive/herod/node/status"
)

// metricsHandler serves the node's Prometheus metrics: the Go runtime's,
// the crawler's herod_crawl_*, the node's herod_* read from its Status
// (status.Collector), and libp2p's own (libp2p_*: swarm connections and
// dials, identify, relay, hole punching, AutoNAT, event bus), which the
// host registers in the same registry (p2phost.New). The registry is the
// node's, so that several nodes in one process (demo, tests) do not
// collide; libp2p's collectors are shared by the hosts of one process,
// which then report their sum. herod_build_info names the build
// (internal/buildinfo).
func (n *Node) metricsHandler() http.Handler {
	c := &status.Collector{Status: n.Status, Caps: n.caps}
	n.metrics.MustRegister(collectors.NewGoCollector(), buildinfo.Collector(), crawl.NewCollector(n.crawler), c, n.repl.LagHistogram())
	return promhttp.HandlerFor(n.metrics, promhttp.HandlerOpts{})
}

// caps returns the node's bandwidth caps as /metrics exports them
// (status.Collector.Caps).
func (n *Node) caps() []status.Cap {
	b := n.bw
	return []status.Cap{{Dir: "down", Use: "all", Rate: b.Down.Rate()}, {Dir: "up", Use: "all", Rate: b.Up.Rate()},
		{Dir: "down", Use: "replication", Rate: b.ReplDown.Rate()}, {Dir: "up", Use: "replication", Rate: b.ReplUp.Rate()}}
}
