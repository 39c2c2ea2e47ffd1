package node

import (
	"net/http"

	"github.com/herod-archive/herod/crawl"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves the node's Prometheus metrics from a registry of its
// own, so that several nodes in one process (demo, tests) do not collide.
func (n *Node) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), crawl.NewCollector(n.crawler), (*statusCollector)(n))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// statusCollector exposes the archive, forwarding and link counters of a
// node's Status as Prometheus metrics, read once per scrape. The crawler's
// own collector exports the herod_crawl_* metrics.
type statusCollector Node

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("herod_"+name, help, labels, nil)
}

var (
	mVersions      = desc("archive_versions", "Versions stored.")
	mArchiveBytes  = desc("archive_bytes", "Bytes of the records of stored versions.")
	mSegments      = desc("archive_segments", "Segment files of the archive.")
	mFwdPending    = desc("forward_pending", "Links waiting for delivery to their owners.")
	mFwdSent       = desc("forward_sent_total", "Links delivered to other nodes.")
	mFwdFailures   = desc("forward_failures_total", "Link deliveries that failed and were retried.")
	mLinksReceived = desc("links_received_total", "Links received from other nodes.")
	mBadFrames     = desc("bad_frames_total", "Malformed or oversized messages from peers.")
	mProcWaits     = desc("processing_waits_total", "Page processing that waited for a worker of the process's CPU gate.")
	mProcWaited    = desc("processing_wait_seconds_total", "Seconds page processing waited for the CPU gate.")
)

// Describe implements prometheus.Collector.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mVersions, mArchiveBytes, mSegments, mFwdPending, mFwdSent,
		mFwdFailures, mLinksReceived, mBadFrames, mProcWaits, mProcWaited} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := (*Node)(c).Status()
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge(mVersions, float64(st.Archive.Versions))
	gauge(mArchiveBytes, float64(st.Archive.Bytes))
	gauge(mSegments, float64(st.Archive.Segments))
	gauge(mFwdPending, float64(st.Forward.Pending))
	counter(mFwdSent, float64(st.Forward.Sent))
	counter(mFwdFailures, float64(st.Forward.Failures))
	counter(mLinksReceived, float64(st.Links.Received))
	counter(mBadFrames, float64(st.Links.BadFrames))
	counter(mProcWaits, float64(st.Processing.Waits))
	counter(mProcWaited, st.Processing.WaitedSec)
}
