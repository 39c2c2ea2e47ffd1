package settings

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// list is a repeatable flag, as cmd/herod's.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, strings.Split(s, ",")...); return nil }
func (l *list) Get() any           { return []string(*l) }
func (l *list) IsList() bool       { return true }

type vals struct {
	rate  float64
	day   time.Duration
	addr  string
	v     bool
	hosts list
}

func newFS() (*flag.FlagSet, *vals) {
	var v vals
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Float64Var(&v.rate, "host-rate", 1, "")
	fs.DurationVar(&v.day, "day", 24*time.Hour, "")
	fs.StringVar(&v.addr, "listen", "127.0.0.1:4001", "")
	fs.BoolVar(&v.v, "v", false, "")
	fs.Var(&v.hosts, "allow-host", "")
	fs.String("config", "", "")
	return fs, &v
}

func writeFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "herod.toml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestPrecedence checks flags > env > file > defaults, setting by setting.
func TestPrecedence(t *testing.T) {
	file := writeFile(t, `
host-rate = 3
day = "1m"
listen = "127.0.0.9:4001"
allow_host = ["a.example", "b.example"]
`)
	fs, v := newFS()
	if err := fs.Parse([]string{"--host-rate", "5"}); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(fs, "HEROD_", file, envOf(map[string]string{"HEROD_HOST_RATE": "4", "HEROD_DAY": "2m", "HEROD_OTHER": "x"}), "config")
	if err != nil {
		t.Fatal(err)
	}
	if v.rate != 5 || v.day != 2*time.Minute || v.addr != "127.0.0.9:4001" || v.v || strings.Join(v.hosts, " ") != "a.example b.example" {
		t.Errorf("values %+v", *v)
	}
	want := map[string]Source{"host-rate": FromFlag, "day": FromEnv, "listen": FromFile, "allow-host": FromFile, "v": FromDefault, "config": FromDefault}
	for _, s := range got {
		if want[s.Name] != s.Source {
			t.Errorf("%s from %s, want %s", s.Name, s.Source, want[s.Name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d settings, want %d", len(got), len(want))
	}
}

// TestErrorsNameTheSetting checks that bad values and keys are refused
// with the setting's name and source in the message.
func TestErrorsNameTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       []string
	}{
		{"bad env value", "", map[string]string{"HEROD_DAY": "soon"}, []string{"setting day", "HEROD_DAY"}},
		{"bad file value", `host-rate = "fast"`, nil, []string{"setting host-rate", "herod.toml"}},
		{"unknown key", `hostrate = 2`, nil, []string{`unknown setting "hostrate"`}},
		{"config in file", `config = "other.toml"`, nil, []string{`unknown setting "config"`}},
		{"array for one value", `listen = ["a", "b"]`, nil, []string{"setting listen", "array"}},
		{"table", "[crawl]\nhost-rate = 2", nil, []string{`unknown setting "crawl"`}},
		{"not TOML", `host-rate = `, nil, []string{"config file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			fs, _ := newFS()
			_ = fs.Parse(nil)
			_, err := Resolve(fs, "HEROD_", path, envOf(tc.env), "config")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	fs, _ := newFS()
	_ = fs.Parse(nil)
	if _, err := Resolve(fs, "HEROD_", filepath.Join(t.TempDir(), "missing.toml"), envOf(nil)); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestTOMLRoundTrip checks that the settings printed as TOML read back
// to the same values.
func TestTOMLRoundTrip(t *testing.T) {
	fs, v := newFS()
	if err := fs.Parse([]string{"--host-rate", "2.5", "--day", "90s", "--listen", `127.0.0.1:1 "x"`, "--v", "--allow-host", "a,b"}); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(fs, "HEROD_", "", envOf(nil), "config")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range got {
		if s.Name != "config" {
			b.WriteString(s.Name + " = " + TOML(s) + "\n")
		}
	}
	path := writeFile(t, b.String())
	fs2, v2 := newFS()
	_ = fs2.Parse(nil)
	if _, err := Resolve(fs2, "HEROD_", path, envOf(nil), "config"); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if v2.rate != v.rate || v2.day != v.day || v2.addr != v.addr || v2.v != v.v || strings.Join(v2.hosts, ",") != strings.Join(v.hosts, ",") {
		t.Errorf("read back %+v, want %+v\n%s", *v2, *v, b.String())
	}
}
