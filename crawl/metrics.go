package crawl

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a crawler's Stats as Prometheus metrics, named
// herod_crawl_*. The day counters reset at each new day, so they are
// gauges ("..._today"). Register one per crawler.
type Collector struct {
	c     *Crawler
	descs map[string]*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// metricHelp names the exported gauges.
var metricHelp = map[string]string{
	"day":                 "Current crawl day number.",
	"queued":              "URLs waiting to be fetched.",
	"in_flight":           "Fetches under way.",
	"fetched_today":       "Requests answered by origin servers today.",
	"new_versions_today":  "New versions stored today.",
	"not_modified_today":  "304 answers today.",
	"unchanged_today":     "200 answers whose payload equals the stored version, today.",
	"forwarded_today":     "Links handed to the forwarder today.",
	"bytes_fetched_today": "Payload bytes received today.",
	"known_urls":          "URLs ever queued on this node.",
	"active_hosts":        "Hosts being crawled.",
	"waiting_hosts":       "Hosts with queued URLs waiting for their turn.",
	"connections":         "Connections to origin servers open now for pages, kept-alive ones included.",
	"cap_held":            "Requests the local per-host cap held back after the ring-wide budget granted them, since start.",
}

// NewCollector returns a Collector for c.
func NewCollector(c *Crawler) *Collector {
	m := &Collector{c: c, descs: make(map[string]*prometheus.Desc, len(metricHelp)+1)}
	for name, help := range metricHelp {
		m.descs[name] = prometheus.NewDesc("herod_crawl_"+name, help, nil, nil)
	}
	m.descs["errors_today"] = prometheus.NewDesc("herod_crawl_errors_today", "Refusals and failures today, by kind.", []string{"kind"}, nil)
	return m
}

// Describe implements prometheus.Collector.
func (m *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Collector) Collect(ch chan<- prometheus.Metric) {
	st := m.c.Stats()
	vals := map[string]float64{
		"day": float64(st.Day), "queued": float64(st.Queued), "in_flight": float64(st.InFlight),
		"fetched_today": float64(st.FetchedToday), "new_versions_today": float64(st.NewVersions),
		"not_modified_today": float64(st.NotModified), "unchanged_today": float64(st.Unchanged),
		"forwarded_today": float64(st.Forwarded), "bytes_fetched_today": float64(st.BytesFetched),
		"known_urls": float64(st.KnownURLs), "active_hosts": float64(st.ActiveHosts),
		"waiting_hosts": float64(st.WaitingHosts), "connections": float64(st.Connections),
		"cap_held": float64(st.CapHeld),
	}
	for name, v := range vals {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.GaugeValue, v)
	}
	kinds := make([]string, 0, len(st.ErrorsByKind))
	for k := range st.ErrorsByKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(m.descs["errors_today"], prometheus.GaugeValue, float64(st.ErrorsByKind[k]), k)
	}
}
