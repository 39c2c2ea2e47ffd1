package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// portData is a data directory whose archive holds one page of
// 127.0.0.5:8080, a host with a port.
func portData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c := archive.Capture{URL: "http://127.0.0.5:8080/", Time: t0, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<title>lan</title>")}
	if _, _, err := s.Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExportNothingMatched: an export that selects nothing fails, says
// no file was written, writes none, and suggests the host with its port.
func TestExportNothingMatched(t *testing.T) {
	data := portData(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		hint string
	}{
		{"warc", []string{"--host", "127.0.0.5", "-o", "x.warc.gz"}, "try --host 127.0.0.5:8080"},
		{"warc and cdxj", []string{"--host", "127.0.0.5", "-o", "x.warc.gz", "--cdx", "x.cdxj"}, "try --host 127.0.0.5:8080"},
		{"wacz", []string{"--host", "127.0.0.5", "-o", "x.wacz"}, "try --host 127.0.0.5:8080"},
		{"links", []string{"--prefix", "http://127.0.0.5:8080/none", "--format", "links", "-o", "x.tsv"}, "nothing matched --prefix http://127.0.0.5:8080/none"},
		{"dates", []string{"--host", "127.0.0.5:8080", "--from", "2027", "-o", "x.warc.gz"}, "nothing matched --host 127.0.0.5:8080 --from 2027"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--data", data}
			for _, a := range tc.args {
				if strings.HasPrefix(a, "x.") {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			msg, err := run(t, exportCmd, args...)
			if !errors.Is(err, errNothing) || !strings.Contains(err.Error(), "no file was written") || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("export %q: %v (want nothing matched, no file written, %q)\n%s", args, err, tc.hint, msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of %d lines: %q", strings.Count(err.Error(), "\n")+1, err)
			}
			if files, _ := os.ReadDir(dir); len(files) > 0 {
				t.Errorf("files written: %v", files)
			}
		})
	}
	// Ring-wide: the gateway's stream is empty; nothing is written either.
	s, err := archive.Open(filepath.Join(data, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gw, err := gateway.New(gateway.Config{Archive: &storeArchive{s: s}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	for _, o := range []string{"ring.warc.gz", "ring.wacz"} {
		_, err := run(t, exportCmd, "--node", srv.URL, "--host", "127.0.0.5", "-o", filepath.Join(dir, o))
		if !errors.Is(err, errNothing) || !strings.Contains(err.Error(), "like --host 127.0.0.5:8080") {
			t.Errorf("ring-wide export of nothing to %s: %v", o, err)
		}
		if files, _ := os.ReadDir(dir); len(files) > 0 {
			t.Errorf("files written: %v", files)
		}
	}
}

// TestExportNames: the format follows -o's name unless a format flag is
// given; a name of another format is refused with the name to use.
func TestExportNames(t *testing.T) {
	data := makeData(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "a.wacz")
	if msg, err := run(t, exportCmd, "--data", data, "--host", "a.example", "-o", out); err != nil {
		t.Fatalf("-o a.wacz: %v\n%s", err, msg)
	}
	if zr, err := zip.OpenReader(out); err != nil {
		t.Errorf("-o a.wacz wrote no zip: %v", err)
	} else {
		zr.Close()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--wacz", "-o", "x.warc.gz"}, "--wacz writes a WACZ (a zip), not a warc: name the file x.wacz"},
		{[]string{"--format", "warc", "-o", "x.wacz"}, "name the file x.warc.gz"},
		{[]string{"-o", "x.warc"}, "a WARC export is gzip-compressed: name the file x.warc.gz"},
		{[]string{"--format", "links", "-o", "x.jsonl"}, "name the file x.tsv"},
	} {
		args := append([]string{"--data", data, "--host", "a.example"}, tc.args...)
		msg, err := run(t, exportCmd, args...)
		if !errors.Is(err, errUsage) || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("export %q: %v\n%s\nwant one line: %q", tc.args, err, msg, tc.want)
		}
	}
	if files, _ := os.ReadDir("."); len(files) > 0 {
		for _, f := range files {
			if strings.HasPrefix(f.Name(), "x.") {
				t.Errorf("refused export wrote %s", f.Name())
			}
		}
	}
}

// TestExportTerminal: a WARC or WACZ is not written to a terminal; links
// are text and are.
func TestExportTerminal(t *testing.T) {
	data := makeData(t)
	ctl, tty := openPTY(t)
	for _, args := range [][]string{{}, {"--wacz"}} {
		var errOut bytes.Buffer
		err := exportCmd(context.Background(), append([]string{"--data", data, "--host", "a.example"}, args...), tty, &errOut)
		if err == nil || !strings.Contains(err.Error(), "refusing to write a") || !strings.Contains(err.Error(), "give -o FILE") {
			t.Errorf("export %q to a terminal: %v", args, err)
		}
	}
	go func() { // the terminal's reader, so that writes do not block
		b := make([]byte, 4096)
		for {
			if _, err := ctl.Read(b); err != nil {
				return
			}
		}
	}()
	var errOut bytes.Buffer
	if err := exportCmd(context.Background(), []string{"--data", data, "--host", "a.example", "--format", "links"}, tty, &errOut); err != nil {
		t.Errorf("links to a terminal: %v\n%s", err, errOut.String())
	}
}
