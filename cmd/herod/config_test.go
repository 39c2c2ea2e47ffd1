package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigSources runs herod config with a value from each source and
// checks the printed value and source of each, then reads the printed
// settings back as a config file and gets the same values.
func TestConfigSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "herod.toml")
	os.WriteFile(file, []byte("host-rate = 3\ndownload_rate = \"2M\"\nday = \"1m\"\nallow-host = [\"a.example\", \"b.example\"]\nreplicas = 5\n"), 0o644)
	t.Setenv("HEROD_DAY", "2m")
	t.Setenv("HEROD_REPLICAS", "2")
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"config", "--config", file, "--replicas", "4", "--log-format", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		`host-rate = 3 .*# file ` + file,
		`download-rate = "2M" .*# file`,
		`day = "2m0s" .*# env HEROD_DAY`,
		`replicas = 4 .*# flag --replicas`,
		`log-format = "json" .*# flag --log-format`,
		`allow-host = \["a.example", "b.example"\] .*# file`,
		`vnodes = 4 .*# default`,
		`replication-share = 0.5 .*# default`,
	} {
		if !matchLine(out.String(), want) {
			t.Errorf("no line matches %q in\n%s", want, out.String())
		}
	}
	// The output is a config file: read back with no flags or variables,
	// it prints the same values.
	os.Unsetenv("HEROD_DAY")
	os.Unsetenv("HEROD_REPLICAS")
	back := filepath.Join(dir, "back.toml")
	os.WriteFile(back, out.Bytes(), 0o644)
	var out2 bytes.Buffer
	if code := dispatch(context.Background(), []string{"config", "--config", back}, &out2, &errb); code != 0 {
		t.Fatalf("reading the printed settings back: exit %d: %s", code, errb.String())
	}
	if a, b := values(out.String()), values(out2.String()); a != b {
		t.Errorf("read back:\n%s\nwant\n%s", b, a)
	}
}

// TestRunRefusesBadSettings checks that herod run refuses bad values at
// start, naming the setting and its source, before touching its data
// directory.
func TestRunRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		file string
		want []string
	}{
		{"replicas", []string{"--replicas", "0"}, nil, "", []string{"setting replicas = 0 (from flag --replicas)"}},
		{"env", nil, map[string]string{"HEROD_REPLICATION_SHARE": "1.5"}, "", []string{"setting replication-share = 1.5 (from env HEROD_REPLICATION_SHARE)"}},
		{"file", nil, nil, "listen = \"nowhere\"\n", []string{"setting listen = \"nowhere\" (from file"}},
		{"file key", nil, nil, "hostrate = 3\n", []string{`unknown setting "hostrate"`}},
		{"log format", []string{"--log-format", "xml"}, nil, "", []string{"setting log-format"}},
		{"env parse", nil, map[string]string{"HEROD_DOWNLOAD_RATE": "fast"}, "", []string{"setting download-rate", "HEROD_DOWNLOAD_RATE"}},
		{"join", []string{"--join", "/ip4/1.2.3.4/tcp/1"}, nil, "", []string{"setting join"}},
		{"several", []string{"--vnodes", "0", "--day", "10ms"}, nil, "", []string{"setting vnodes", "setting day"}},
		{"browser", []string{"--browser-cpu", "0", "--browser-concurrency", "0", "--browser-rules", "/nonexistent/rules"}, nil, "",
			[]string{"setting browser-cpu = 0", "setting browser-concurrency = 0", "setting browser-rules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			args := append([]string{"run", "--data", data}, tc.args...)
			if tc.file != "" {
				f := filepath.Join(dir, "herod.toml")
				os.WriteFile(f, []byte(tc.file), 0o644)
				args = append(args, "--config", f)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			if code := dispatch(context.Background(), args, &out, &errb); code != 1 {
				t.Fatalf("exit %d, want 1; stderr %s", code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q does not say %q", errb.String(), w)
				}
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("the data directory was created for a refused start (%v)", err)
			}
		})
	}
}

func TestByteRate(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1500": 1500, "500k": 500_000, "2M": 2_000_000, "1.5G": 1_500_000_000, "64K": 64_000, "2T": 2e12, "2MB": 2e6, "1Mi": 1 << 20} {
		var b byteRate
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "fast", "2X", "1e30G"} {
		var b byteRate
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) accepted: %d", in, b)
		}
	}
}

// matchLine reports whether a line of s matches the pattern (a regexp
// with " .*" standing for the alignment spaces).
func matchLine(s, pattern string) bool {
	re := regexp.MustCompile("^" + pattern + ".*$")
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// values strips the source comments of herod config's output.
func values(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		v, _, _ := strings.Cut(l, "#")
		out = append(out, strings.TrimSpace(v))
	}
	return strings.Join(out, "\n")
}

// TestSampleConfig checks that the sample configuration the systemd unit
// ships with is accepted.
func TestSampleConfig(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"config", "--config", "../../scripts/systemd/herod.toml"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `listen = "0.0.0.0:4001"`) {
		t.Errorf("sample settings not read:\n%s", out.String())
	}
}
