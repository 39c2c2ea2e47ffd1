package exchange

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herod-archive/herod/internal/browsertest"
)

// replayWebVersion is the ReplayWeb.page release the test serves; .ci/run
// unpacks it into scripts/replayweb/package.
const replayWebVersion = "2.5.3"

// replayWebPage returns the directory holding ReplayWeb.page's ui.js and
// sw.js, unpacking the npm package there first if needed, or skips t.
func replayWebPage(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "replayweb")
	pkg := filepath.Join(dir, "package")
	if _, err := os.Stat(filepath.Join(pkg, "sw.js")); err == nil {
		return pkg
	}
	npm, err := exec.LookPath("npm")
	if err != nil || os.Getenv("HEROD_SKIP_NODE") != "" {
		t.Skip("npm not installed (or HEROD_SKIP_NODE set): cannot fetch ReplayWeb.page " + replayWebVersion)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-pack.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if _, err := os.Stat(filepath.Join(pkg, "sw.js")); err == nil {
		return pkg
	}
	// npm pack fetches the package alone: its bundles need no dependencies.
	cmd := exec.Command(npm, "pack", "--silent", "replaywebpage@"+replayWebVersion)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm pack replaywebpage@%s (needs the npm registry once): %v\n%s", replayWebVersion, err, out)
	}
	tgz := filepath.Join(dir, "replaywebpage-"+replayWebVersion+".tgz")
	if out, err := exec.Command("tar", "-xzf", tgz, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("unpack %s: %v\n%s", tgz, err, out)
	}
	os.Remove(tgz)
	return pkg
}

// findScript runs in the embedding page: it walks every shadow root and
// same-origin frame for the replayed fixture page and posts what it finds
// once the page's heading text is there and its image has loaded.
const findScript = `
const want = WANT;
function docs(root, out) {
  for (const el of root.querySelectorAll("*")) {
    if (el.shadowRoot) docs(el.shadowRoot, out);
    if (el.tagName === "IFRAME") {
      try { const d = el.contentDocument; if (d) { out.push(d); docs(d, out); } } catch (e) {}
    }
  }
  return out;
}
let n = 0;
const timer = setInterval(() => {
  n++;
  const all = docs(document, []);
  for (const d of all) {
    const h = d.getElementById("t"), img = d.getElementById("logo");
    if (h && h.textContent.includes(want) && img && img.complete && img.naturalWidth > 0) {
      clearInterval(timer);
      fetch("/result", {method: "POST", body: JSON.stringify({
        done: true, text: h.textContent, title: d.title, imgWidth: img.naturalWidth, imgHeight: img.naturalHeight,
        imgSrc: img.currentSrc, url: d.location.href})});
      return;
    }
  }
  if (n % 20 === 0) fetch("/result", {method: "POST", body: JSON.stringify({
    frames: all.map(d => d.location.href + " " + JSON.stringify(d.body ? d.body.innerText.slice(0, 160) : ""))})});
}, 250);
`

// replayBudget bounds the wait for the replayed page.
const replayBudget = 4 * time.Minute

// replayResult is what findScript posts.
type replayResult struct {
	Done      bool     `json:"done"`
	Text      string   `json:"text"`
	Title     string   `json:"title"`
	ImgWidth  int      `json:"imgWidth"`
	ImgHeight int      `json:"imgHeight"`
	ImgSrc    string   `json:"imgSrc"`
	URL       string   `json:"url"`
	Frames    []string `json:"frames"`
}

// TestReplayWebPage opens an exported WACZ in ReplayWeb.page, served
// locally, in headless Chromium, and finds the archived home page's text
// and its image, decoded at its size, in the rendered replay.
func TestReplayWebPage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the browser test")
	}
	browser := browsertest.Find(t)
	pkg := replayWebPage(t)
	wacz, _ := buildWACZ(t, WACZOptions{Signer: newSigner()})

	results := make(chan replayResult, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><script src="/replay/ui.js"></script></head><body style="height:800px">`+
			`<replay-web-page source="/fixture.wacz" url="`+siteHome+`" replayBase="/replay/" embed="replayonly" style="height:700px"></replay-web-page>`+
			`<script>`+strings.Replace(findScript, "WANT", jsString(homeText), 1)+`</script></body></html>`)
	})
	// The player's directory is served whole, as a static host would: its
	// frame loads /replay/?source=… from the service worker once that
	// controls the page, and from index.html here if the frame is quicker.
	mux.Handle("/replay/", http.StripPrefix("/replay/", http.FileServer(http.Dir(pkg))))
	mux.HandleFunc("/fixture.wacz", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "fixture.wacz", t0, bytes.NewReader(wacz))
	})
	mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		var res replayResult
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&res); err == nil {
			select {
			case results <- res:
			default:
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// The player loads in seconds; the budget is for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), replayBudget)
	defer cancel()
	cmd := exec.Command(browser.Path(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--remote-debugging-port=0",
		"http://"+ln.Addr().String()+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the browser and its helpers
		_ = cmd.Wait()
	}
	defer stop()
	var last replayResult
	for {
		select {
		case res := <-results:
			if !res.Done {
				last = res
				continue
			}
			if !strings.Contains(res.Text, homeText) || res.Title != homeTitle || res.ImgWidth != 40 || res.ImgHeight != 30 {
				t.Fatalf("replayed page %+v: want text %q, title %q and a 40x30 image", res, homeText, homeTitle)
			}
			if !strings.Contains(res.URL, siteHome) {
				t.Errorf("replayed frame %q is not the archived %s", res.URL, siteHome)
			}
			t.Logf("ReplayWeb.page replayed %s: %q, image %s %dx%d", res.URL, res.Text, res.ImgSrc, res.ImgWidth, res.ImgHeight)
			return
		case <-ctx.Done():
			stop() // before reading what it wrote
			t.Fatalf("ReplayWeb.page did not show the archived page within %s; frames seen: %v\nbrowser log:\n%s", replayBudget, last.Frames, tail(stderr.Bytes(), 4000))
		}
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
