package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
)

// scriptSite is a site of script-built shells: page i's only content
// comes from /api/<i>.json, and the links to pages 1..n-1 exist only in
// what a browser renders (fakeCapturer).
func scriptSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"text": "content of %s"}`, r.URL.Path)
		case r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/p/"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>app</title><div id=app></div><script src="/app.js"></script>`)
		case r.URL.Path == "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `/* renders #app from /api/<page>.json */`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeCapturer renders without a browser what scriptSite's script would:
// the page, its script and its JSON, and links to every page.
type fakeCapturer struct {
	pages    int
	rendered atomic.Int64
}

func (f *fakeCapturer) Capture(ctx context.Context, u string) (*capture.Result, error) {
	f.rendered.Add(1)
	i := strings.LastIndexByte(u, '/')
	base, name := u[:strings.Index(u[len("http://"):], "/")+len("http://")], u[i+1:]
	if name == "" {
		name = "0"
	}
	res := &capture.Result{URL: u}
	for _, x := range []struct{ url, typ string }{{u, "Document"}, {base + "/app.js", "Script"}, {base + "/api/" + name + ".json", "Fetch"}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, x.url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		res.Exchanges = append(res.Exchanges, capture.Exchange{URL: x.url, Method: http.MethodGet, Status: resp.StatusCode,
			Header: resp.Header, Body: body, Time: now, Received: now, Type: x.typ})
	}
	for k := 1; k < f.pages; k++ {
		res.Links = append(res.Links, fmt.Sprintf("%s/p/%d", base, k))
	}
	res.Screenshot = []byte("\x89PNG\r\n\x1a\n" + name)
	return res, nil
}

// TestRenderDelegation runs the role's protocols without a browser: in a
// 3-node ring where node 1 has the role (a fake renderer), a site of
// script-built pages is crawled from its root. Every page, whoever owns
// it, is rendered once by node 1 and stored at its owner as captured in
// a browser and signed by node 1; so is each page's JSON; the pages only
// the render links to are crawled; the screenshots reach their keys'
// owners. Then a member without the role delivers a record it signed:
// the owner refuses it.
func TestRenderDelegation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const pages, role = 12, 1
	site := scriptSite(t)
	fc := &fakeCapturer{pages: pages}
	base := Config{VirtualServers: 4, StabilizeInterval: 100 * time.Millisecond, FlushInterval: 20 * time.Millisecond,
		ReplicationInterval: 2 * time.Second, Crawl: crawl.Config{HostRate: 2000, Concurrency: 8, AllowPrivate: loopback}}
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, base, func(i int, c *Config) {
		if i == role {
			c.Browser = BrowserConfig{Capture: true, Concurrency: 2, capturer: fc}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	renderer := lr.Nodes[role]
	if err := lr.Nodes[0].Seed(ctx, []string{site.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	held := map[*Node]int{}
	at := func(u string) *archive.Capture {
		t.Helper()
		cu, err := canon.Canonical(u)
		if err != nil {
			cu = u // a urn: screenshot key
		}
		owner := lr.Owner(id.OfString(cu))
		_, c, err := owner.Store().Get(ctx, cu, time.Now())
		if err != nil {
			t.Errorf("%s: not at its owner: %v", u, err)
			return nil
		}
		if !c.Browser || c.Peer != renderer.self.Peer {
			t.Errorf("%s: at its owner, browser %v, signed by %s; want a browser capture by node %d", u, c.Browser, c.Peer, role)
			return c
		}
		held[owner]++
		return c
	}
	for k := range pages {
		p := fmt.Sprintf("%s/p/%d", site.URL, k)
		name := fmt.Sprint(k)
		if k == 0 {
			p = site.URL + "/"
		}
		at(p)
		if c := at(site.URL + "/api/" + name + ".json"); c != nil && !strings.Contains(string(c.Body), "content of") {
			t.Errorf("page %d's JSON: %q", k, c.Body)
		}
		pc, _ := canon.Canonical(p)
		at(archive.ScreenshotURL(pc))
	}
	// Every rendered page reaches the owner's replicas (pushed at once,
	// or by a replication round): with k = 3 on three nodes, all of them
	// hold it.
	err = testwait.Until(30*time.Second, func() error {
		for k := range pages {
			p, _ := canon.Canonical(fmt.Sprintf("%s/p/%d", site.URL, k))
			if k == 0 {
				p, _ = canon.Canonical(site.URL + "/")
			}
			for i, n := range lr.Nodes {
				if vs, _ := n.Store().Versions(ctx, p); len(vs) == 0 {
					return fmt.Errorf("node %d lacks %s", i, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("rendered pages not pushed to the replicas: %v", err)
	}
	if got := fc.rendered.Load(); got != pages {
		t.Errorf("%d renders for %d pages", got, pages)
	}
	for i, n := range lr.Nodes {
		if held[n] == 0 {
			t.Errorf("node %d holds none of the rendered records", i)
		}
		t.Logf("node %d: %+v", i, n.RenderStats())
	}
	if st := renderer.RenderStats(); st.Undeliv != 0 {
		t.Errorf("%d records not delivered", st.Undeliv)
	}

	// A member without the role delivers a record it signed itself.
	liar := lr.Nodes[(role+1)%3]
	var victim *Node
	var u string
	for k := 0; victim == nil; k++ {
		u = fmt.Sprintf("%s/forged/%d", site.URL, k)
		if o := lr.Owner(id.OfString(u)); o != liar {
			victim = o
		}
	}
	v, _, err := liar.Store().Put(ctx, archive.Capture{URL: u, Time: time.Now(), Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("forged"), Browser: true})
	if err != nil {
		t.Fatal(err)
	}
	refusals := victim.members.Stats().Role
	stored, err := liar.render.DeliverTo(ctx, victim.self, []archive.Version{v})
	if err == nil || len(stored) != 0 {
		t.Errorf("a delivery from a member without the role: stored %v, %v", stored, err)
	}
	if got := victim.members.Stats().Role - refusals; got != 1 {
		t.Errorf("the owner counted %d requests outside a member's role, want 1", got)
	}
	if _, _, err := victim.Store().Get(ctx, u, time.Now()); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("the forged record is at its owner: %v", err)
	}
}
