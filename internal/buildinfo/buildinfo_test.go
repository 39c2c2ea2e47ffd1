package buildinfo

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestString(t *testing.T) {
	cases := []struct {
		in   Info
		want string
	}{
		{Info{Version: "(devel)", GoVersion: "go1.26.8"}, "herod (devel) (revision unknown) go1.26.8"},
		{Info{Version: "v0.3.1", GoVersion: "go1.26.8", Revision: "0123456789abcdef", Time: "2026-11-28T13:00:00Z"},
			"herod v0.3.1 (revision 0123456789ab, 2026-11-28T13:00:00Z) go1.26.8"},
		{Info{Version: "(devel)", GoVersion: "go1.26.8", Revision: "0123456789abcdef", Modified: true},
			"herod (devel) (revision 0123456789ab+dirty) go1.26.8"},
	}
	for _, c := range cases {
		if got := c.in.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "herod_build_info" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	m := mfs[0].GetMetric()[0]
	in := Read()
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": in.Version, "goversion": in.GoVersion, "revision": in.Short()}
	if m.GetGauge().GetValue() != 1 || !maps.Equal(labels, want) {
		t.Errorf("herod_build_info = %v %v, want 1 %v", m.GetGauge().GetValue(), labels, want)
	}
}
