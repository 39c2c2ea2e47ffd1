package node

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves the node's Prometheus metrics from a registry of its
// own, so that several nodes in one process (demo, tests) do not collide.
func (n *Node) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), (*statusCollector)(n))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// statusCollector exposes a node's Status as Prometheus metrics, read once
// per scrape.
type statusCollector Node

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("herod_"+name, help, labels, nil)
}

var (
	mCrawlDay      = desc("crawl_day", "Current crawl day number.")
	mQueued        = desc("crawl_queued", "URLs waiting in the crawl queue.")
	mInFlight      = desc("crawl_in_flight", "Fetches under way.")
	mFetched       = desc("crawl_fetched_today", "Fetches completed today.")
	mNewVersions   = desc("crawl_new_versions_total", "Fetches that stored a new version.")
	mNotModified   = desc("crawl_not_modified_total", "Fetches answered 304 Not Modified.")
	mUnchanged     = desc("crawl_unchanged_total", "200 answers whose payload equalled the stored version.")
	mErrors        = desc("crawl_errors_total", "Failed fetches by kind.", "kind")
	mVersions      = desc("archive_versions", "Versions stored.")
	mArchiveBytes  = desc("archive_bytes", "Bytes of version files on disk.")
	mFwdPending    = desc("forward_pending", "Links waiting for delivery to their owners.")
	mFwdSent       = desc("forward_sent_total", "Links delivered to other nodes.")
	mFwdFailures   = desc("forward_failures_total", "Link deliveries that failed and were retried.")
	mLinksReceived = desc("links_received_total", "Links received from other nodes.")
	mBadFrames     = desc("bad_frames_total", "Malformed or oversized messages from peers.")
)

// Describe implements prometheus.Collector.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mCrawlDay, mQueued, mInFlight, mFetched, mNewVersions,
		mNotModified, mUnchanged, mErrors, mVersions, mArchiveBytes, mFwdPending, mFwdSent,
		mFwdFailures, mLinksReceived, mBadFrames} {
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
	gauge(mCrawlDay, float64(st.Crawl.Day))
	gauge(mQueued, float64(st.Crawl.Queued))
	gauge(mInFlight, float64(st.Crawl.InFlight))
	gauge(mFetched, float64(st.Crawl.FetchedToday))
	counter(mNewVersions, float64(st.Crawl.NewVersions))
	counter(mNotModified, float64(st.Crawl.NotModified))
	counter(mUnchanged, float64(st.Crawl.Unchanged))
	for k, v := range st.Crawl.ErrorsByKind {
		counter(mErrors, float64(v), k)
	}
	gauge(mVersions, float64(st.Archive.Versions))
	gauge(mArchiveBytes, float64(st.Archive.Bytes))
	gauge(mFwdPending, float64(st.Forward.Pending))
	counter(mFwdSent, float64(st.Forward.Sent))
	counter(mFwdFailures, float64(st.Forward.Failures))
	counter(mLinksReceived, float64(st.Links.Received))
	counter(mBadFrames, float64(st.Links.BadFrames))
}
