package main

import (
	"archive/zip"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/herod-archive/herod/archive/exchange"
)

func TestExportFormatsData(t *testing.T) {
	data := makeData(t)
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := crypto.MarshalPrivateKey(k)
	if err := os.WriteFile(filepath.Join(data, "identity.key"), kb, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	out := filepath.Join(dir, "a.wacz")
	if msg, err := run(t, exportCmd, "--data", data, "--host", "a.example", "--revisits", "--wacz", "--sign", "-o", out); err != nil {
		t.Fatalf("wacz: %v\n%s", err, msg)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = string(b)
	}
	// 3 URLs, 2 versions each, 1 revisit each (the unchanged third day).
	if n := strings.Count(files[exchange.IndexPath], "\n"); n != 9 || strings.Count(files[exchange.IndexPath], "warc/revisit") != 3 {
		t.Errorf("index of %d lines:\n%s", n, files[exchange.IndexPath])
	}
	var dg exchange.Digest
	if err := json.Unmarshal([]byte(files[exchange.DigestPath]), &dg); err != nil || dg.SignedData == nil {
		t.Fatalf("unsigned digest %q: %v", files[exchange.DigestPath], err)
	}

	// A domain's WACZ opens on the domain's root, a whole archive's on
	// the page captured first.
	for _, c := range []struct{ sel, want string }{{"--domain", "http://a.example/"}, {"--all", "http://a.example/"}} {
		out := filepath.Join(dir, c.sel[2:]+".wacz")
		args := []string{"--data", data, c.sel, "--wacz", "-o", out}
		if c.sel == "--domain" {
			args = slices.Insert(args, 3, "example")
		}
		if msg, err := run(t, exportCmd, args...); err != nil {
			t.Fatalf("%s wacz: %v\n%s", c.sel, err, msg)
		}
		zr, err := zip.OpenReader(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			if f.Name == exchange.PackagePath {
				rc, _ := f.Open()
				var pkg exchange.Package
				err := json.NewDecoder(rc).Decode(&pkg)
				rc.Close()
				if err != nil || pkg.MainPageURL != c.want {
					t.Errorf("%s: main page %q, %v; want %q", c.sel, pkg.MainPageURL, err, c.want)
				}
			}
		}
		zr.Close()
	}

	links := filepath.Join(dir, "a.tsv")
	if msg, err := run(t, exportCmd, "--data", data, "--host", "a.example", "--format", "links", "-o", links); err != nil {
		t.Fatalf("links: %v\n%s", err, msg)
	}
	text := filepath.Join(dir, "a.jsonl")
	msg, err := run(t, exportCmd, "--data", data, "--url", "http://a.example/x", "--format", "text", "-o", text)
	if err != nil || !strings.Contains(msg, "text of 2 HTML versions") {
		t.Fatalf("text: %v\n%s", err, msg)
	}
	b, _ := os.ReadFile(text)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"text":"http://a.example/x rev 1"`) {
		t.Errorf("text lines %q", lines)
	}

	for _, args := range [][]string{
		{"--data", data, "--host", "a.example", "--wacz", "--resume", "http://a.example/ 20260301120000", "-o", out},
		{"--data", data, "--host", "a.example", "--format", "pdf"},
		{"--data", data, "--host", "a.example", "--format", "links", "--cdx", "x.cdxj"},
		{"--data", data, "--host", "a.example", "--sign"},
	} {
		if msg, err := run(t, exportCmd, args...); err == nil {
			t.Errorf("export %q succeeded:\n%s", args, msg)
		}
	}
}
