package status

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCollector(t *testing.T) {
	st := Status{Reach: "listen", Links: LinkStats{Received: 7}, Wire: []WireStats{{Protocol: "/herod/links/1.0.0", In: 3, Out: 5}}}
	st.Archive.Versions = 2
	st.Load.InFlight, st.Load.Busy, st.Load.Stalled, st.Load.Spooled = 3, 4, 5, 6
	st.Load.Limited, st.Load.PacedSeconds, st.Load.Clients = 7, 1.5, 9
	c := &Collector{
		Status: func() Status { return st },
		Caps:   func() []Cap { return []Cap{{Dir: "down", Use: "all", Rate: 100}} },
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got[key] = mf.GetType().String() + " " + strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	for k, v := range map[string]string{
		"herod_archive_versions":                                     "GAUGE 2",
		"herod_links_received_total":                                 "COUNTER 7",
		"herod_wire_bytes_total,dir=in,protocol=/herod/links/1.0.0":  "COUNTER 3",
		"herod_wire_bytes_total,dir=out,protocol=/herod/links/1.0.0": "COUNTER 5",
		"herod_reach,how=listen":                                     "GAUGE 1",
		"herod_bandwidth_cap_bytes_per_second,dir=down,use=all":      "GAUGE 100",
		"herod_gateway_in_flight":                                    "GAUGE 3",
		"herod_gateway_busy_total":                                   "COUNTER 4",
		"herod_gateway_stalled_total":                                "COUNTER 5",
		"herod_gateway_spooled_total":                                "COUNTER 6",
		"herod_gateway_limited_total":                                "COUNTER 7",
		"herod_gateway_paced_seconds_total":                          "COUNTER 1.5",
		"herod_gateway_clients":                                      "GAUGE 9",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if want := len(nodeMetrics) + 2 + 1 + 1 + membersMetrics; len(got) != want {
		t.Errorf("%d metrics, want %d", len(got), want)
	}
}

// The counter's totals update asynchronously: only the order is checked.
func TestWireSorted(t *testing.T) {
	bw := metrics.NewBandwidthCounter()
	bw.LogSentMessageStream(10, "/b", "p")
	bw.LogRecvMessageStream(4, "/a", "p")
	got := Wire(bw)
	if len(got) != 2 || got[0].Protocol != "/a" || got[1].Protocol != "/b" {
		t.Fatalf("Wire = %+v", got)
	}
}

func TestStatusJSON(t *testing.T) {
	b, err := json.Marshal(Status{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"peer"`, `"ringCalls"`, `"links"`, `"politeness"`, `"trust"`, `"takenOver"`, `"wire"`, `"load"`, `"inFlight"`, `"busy"`, `"stalled"`, `"spooled"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("status JSON lacks %s: %s", k, b)
		}
	}
	if strings.Contains(string(b), `"relay"`) {
		t.Errorf("empty relay not omitted: %s", b)
	}
}
