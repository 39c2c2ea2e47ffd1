package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Info describes the running binary.
type Info struct {
	// Version is the module version ("v0.3.1"), or "(devel)" for a binary
	// built from a work tree.
	Version string
	// GoVersion is the Go release that built the binary ("go1.26.8").
	GoVersion string
	// Revision is the VCS commit built, "" when the build did not record
	// it (go run, go test); Modified says the work tree had changes.
	Revision string
	Modified bool
	// Time is the commit's time as recorded, RFC 3339, or "".
	Time string
}

// Read returns the running binary's Info; fields the build did not record
// are "" (Version "(devel)").
func Read() Info {
	in := Info{Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "vcs.time":
			in.Time = s.Value
		}
	}
	return in
}

// Short returns the revision's first 12 characters, with "+dirty" for a
// modified work tree, or "unknown".
func (in Info) Short() string {
	if in.Revision == "" {
		return "unknown"
	}
	r := in.Revision[:min(12, len(in.Revision))]
	if in.Modified {
		r += "+dirty"
	}
	return r
}

// String is the one line `herod version` prints:
// "herod (devel) (revision 0123456789ab, 2026-11-28T13:00:00Z) go1.26.8".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("herod " + in.Version + " (revision " + in.Short())
	if in.Time != "" {
		b.WriteString(", " + in.Time)
	}
	b.WriteString(") " + in.GoVersion)
	return b.String()
}

// Collector returns a collector of the gauge herod_build_info, always 1,
// labelled with the binary's version, goversion and revision, as
// Prometheus exporters conventionally expose their build.
func Collector() prometheus.Collector {
	in := Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "herod_build_info",
		Help:        "Always 1; the labels name the herod build: module version, Go version and VCS revision.",
		ConstLabels: prometheus.Labels{"version": in.Version, "goversion": in.GoVersion, "revision": in.Short()},
	})
	g.Set(1)
	return g
}
