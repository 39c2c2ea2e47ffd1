package crawl

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCollector(t *testing.T) {
	c, err := New(t.TempDir(), Config{}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Add(context.Background(), []string{"http://example.org/", "http://example.org/?q=1", "mailto:x"}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(c)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"herod_crawl_queued": 1, "herod_crawl_known_urls": 1, "herod_crawl_in_flight": 0,
		"herod_crawl_errors_today/bad_url": 1, "herod_crawl_errors_today/dynamic": 1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(metricHelp)+2 {
		t.Errorf("%d metrics: %v", len(got), got)
	}
}
