package node

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Writers of other tools for the import tests: warcio.js (the WARC
// library of webrecorder) writes WARCs through writeWARCScript, and
// js-wacz (the Harvard Library Innovation Lab's WACZ writer) packs one
// into a WACZ. Both come from the npm registry at exact versions,
// installed once into the user's cache directory; the tests that need
// them skip when npm is missing, the registry cannot be reached, or
// HEROD_SKIP_NODE is set.

const (
	jsWACZVersion  = "0.1.6"
	warcioVersion  = "2.4.11"
	jsToolsTimeout = "300" // seconds for npm install
)

// writeWARCScript writes a gzip WARC from a JSON list of records with
// warcio.js: node write.mjs OUT SPEC.
const writeWARCScript = `import fs from "node:fs";
import { WARCRecord, WARCSerializer } from "warcio";
const [out, specPath] = process.argv.slice(2);
const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
fs.writeFileSync(out, "");
const enc = new TextEncoder();
for (const r of spec) {
  const opts = { url: r.url, date: r.date, type: r.type, warcVersion: "WARC/1.1" };
  if (r.type === "response" || r.type === "revisit") {
    opts.statusline = "HTTP/1.1 " + r.status + " OK";
    opts.httpHeaders = r.headers;
  }
  if (r.type === "resource") {
    opts.warcHeaders = { "Content-Type": r.headers["Content-Type"] };
  }
  if (r.type === "revisit") {
    opts.refersToUrl = r.url;
    opts.refersToDate = r.refersToDate;
    opts.warcHeaders = { "WARC-Payload-Digest": r.payloadDigest,
      "WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest" };
  }
  const body = r.type === "revisit" ? [] : [enc.encode(r.body)];
  const rec = await WARCRecord.create(opts, (async function* () { for (const b of body) yield b; })());
  fs.appendFileSync(out, await WARCSerializer.serialize(rec, { gzip: true }));
}
`

// jsTools runs warcio.js and js-wacz.
type jsTools struct{ node, dir string }

// setupJSTools returns the tools, installing them on first use, or
// skips t.
func setupJSTools(t *testing.T) *jsTools {
	t.Helper()
	if os.Getenv("HEROD_SKIP_NODE") != "" {
		t.Skip("HEROD_SKIP_NODE set")
	}
	nodeBin, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node/npm not installed: no warcio.js or js-wacz to write the files to import")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "herod-test", "jstools-wacz"+jsWACZVersion+"-warcio"+warcioVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "js-wacz")); err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("timeout", jsToolsTimeout, npm, "install", "--no-audit", "--no-fund", "--prefix", tmp,
			"@harvard-lil/js-wacz@"+jsWACZVersion, "warcio@"+warcioVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm install of js-wacz %s and warcio %s failed (registry unreachable?): %v\n%s", jsWACZVersion, warcioVersion, err, out)
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "write.mjs"), []byte(writeWARCScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return &jsTools{node: nodeBin, dir: dir}
}

// warcRec is one record for writeWARC.
type warcRec struct {
	URL           string            `json:"url"`
	Date          string            `json:"date"`
	Type          string            `json:"type"`
	Status        int               `json:"status,omitempty"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body,omitempty"`
	RefersToDate  string            `json:"refersToDate,omitempty"`
	PayloadDigest string            `json:"payloadDigest,omitempty"`
}

// writeWARC writes recs into a gzip WARC at out with warcio.js.
func (j *jsTools) writeWARC(t *testing.T, out string, recs []warcRec) {
	t.Helper()
	spec, _ := json.Marshal(recs)
	sp := out + ".json"
	if err := os.WriteFile(sp, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(j.node, filepath.Join(j.dir, "write.mjs"), out, sp).CombinedOutput(); err != nil {
		t.Fatalf("warcio.js: %v\n%s", err, b)
	}
}

// wacz packs the WARC at in into a WACZ at out with js-wacz.
func (j *jsTools) wacz(t *testing.T, in, out string) {
	t.Helper()
	cmd := exec.Command(j.node, filepath.Join(j.dir, "node_modules", "@harvard-lil", "js-wacz", "bin", "cli.js"), "create", "-f", in, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("js-wacz: %v\n%s", err, b)
	}
}
