package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/buildinfo"
)

// TestBadInputOneLine gives each command a bad input a person makes: each
// gets one line on stderr that says what to do, and a non-zero exit.
func TestBadInputOneLine(t *testing.T) {
	data := makeData(t)
	runData := filepath.Join(t.TempDir(), "node")
	out := filepath.Join(t.TempDir(), "x.warc.gz")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"statu"}, 2, "unknown command \"statu\": did you mean `herod status`?"},
		{[]string{"exprot", "--data", data}, 2, "did you mean `herod export`?"},
		{[]string{"frobnicate"}, 2, "run `herod help` for the commands"},
		{[]string{"run", "--quot", "50G"}, 2, "unknown flag --quot: did you mean --quota?"},
		{[]string{"run", "--dat", runData}, 2, "did you mean --data?"},
		{[]string{"run", "--quota", "50X"}, 2, `invalid value "50X" for --quota: want bytes, like 500M, 50G or 10Mi; run ` + "`herod run --help`"},
		{[]string{"run", "--day", "soon"}, 2, "want a duration, like 90s, 10m, 24h or 1d"},
		{[]string{"run", "--data", runData, "example.org"}, 1, `argument "example.org" is not a URL to crawl`},
		{[]string{"run", "--data", runData, "https://example.org/", "--listen", "127.0.0.1:1"}, 1, "flag --listen after the URL https://example.org/: give the flags first"},
		{[]string{"status", "--watch", "often"}, 1, `unexpected argument "often"`},
		{[]string{"status", "--watch=often"}, 2, "want an interval, like 2s"},
		{[]string{"export", "--data", data, "--host", "a.example", "--wacz", "-o", out}, 2, "name the file " + strings.TrimSuffix(out, ".warc.gz") + ".wacz"},
		{[]string{"export", "--data", data, "--hots", "a.example"}, 2, "did you mean --host?"},
		{[]string{"export", "--data", data, "a.example"}, 2, "select with --host, --prefix, --url"},
		{[]string{"version", "now"}, 1, "takes no arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(context.Background(), tc.args, &stdout, &stderr)
		msg := stderr.String()
		if code != tc.code || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("herod %q: exit %d, stderr\n%s\nwant exit %d and one line with %q", tc.args, code, msg, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(runData); !os.IsNotExist(err) {
		t.Errorf("a refused run created its data directory (%v)", err)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"run", "config", "demo", "seed", "status", "export", "fsck", "sim", "purge", "version"}
	for in, want := range map[string]string{"statu": "status", "stauts": "status", "exprot": "export", "rnu": "run", "versoin": "version", "frobnicate": "", "x": ""} {
		if got := closest(in, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestByteSizeAndDuration(t *testing.T) {
	for in, want := range map[string]int64{"50G": 50e9, "0": 0, "10Mi": 10 << 20, "1.5T": 1.5e12, "64KiB": 64 << 10, "700": 700, "2GB": 2e9} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("byteSize.Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for in, want := range map[int64]string{50e9: "50G", 10 << 20: "10Mi", 700: "700", 0: "0"} {
		b := byteSize(in)
		if got := b.String(); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]time.Duration{"1d": 24 * time.Hour, "1.5d": 36 * time.Hour, "1d12h": 36 * time.Hour, "90s": 90 * time.Second, "-1s": -time.Second} {
		var d duration
		if err := d.Set(in); err != nil || time.Duration(d) != want {
			t.Errorf("duration.Set(%q) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{"", "d", "xd", "1dd", "soon"} {
		var d duration
		if err := d.Set(in); err == nil {
			t.Errorf("duration.Set(%q) accepted: %v", in, time.Duration(d))
		}
	}
	// herod config takes and prints the suffixed values.
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"config", "--quota", "50G", "--max-body", "20Mi", "--gateway-memory", "256M", "--day", "1d"}, &out, &errb); code != 0 {
		t.Fatalf("config: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{`quota = "50G" .*# flag`, `max-body = "20Mi" .*# flag`, `gateway-memory = "256M" .*# flag`, `day = "24h0m0s" .*# flag`} {
		if !matchLine(out.String(), want) {
			t.Errorf("no line matches %q in\n%s", want, out.String())
		}
	}
}

func TestWatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0}, {[]string{"--watch"}, defaultWatch}, {[]string{"--watch", "5s"}, 5 * time.Second},
		{[]string{"--watch=1s"}, time.Second}, {[]string{"--json", "--watch"}, defaultWatch},
	} {
		fs := flag.NewFlagSet("status", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var w watchFlag
		fs.Var(&w, "watch", "")
		fs.Bool("json", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := w.takeArg(fs); err != nil || time.Duration(w) != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.args, time.Duration(w), err, tc.want)
		}
	}
}

func TestContactWarning(t *testing.T) {
	for c, warn := range map[string]bool{
		"": true, "https://example.com/bot": true, "you@example.org": true, "admin@localhost": true, "ops@archive.example.net": true,
		"you@herod-archive.org": true, "mailto:me@lab.test": true, "http://127.0.0.1/": true, "your.email@here": false,
		"https://archive.herod-archive.org/about": false, "ops@lab.university.edu": false, "mailto:crawl@herod-archive.org": false,
	} {
		if got := contactWarning(c); (got != "") != warn || (warn && !strings.Contains(got, "--contact")) {
			t.Errorf("contactWarning(%q) = %q, want a warning: %v", c, got, warn)
		}
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out.Reset()
		if code := dispatch(context.Background(), args, &out, &errb); code != 0 || out.String() != buildinfo.Read().String()+"\n" {
			t.Errorf("herod %q: exit %d, %q", args, code, out.String())
		}
	}
}
