package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/identity"
)

// gatedCapturer renders a page as its one document, once gate lets it;
// it counts its renders and fails those of URLs in fail.
type gatedCapturer struct {
	gate    chan struct{}
	entered chan struct{}
	renders atomic.Int64
	fail    map[string]bool
}

func (g *gatedCapturer) Capture(ctx context.Context, u string) (*capture.Result, error) {
	g.renders.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.fail[u] {
		return nil, errors.New("the browser crashed")
	}
	now := time.Now()
	return &capture.Result{URL: u, Links: []string{u + "next"}, Exchanges: []capture.Exchange{{URL: u, Method: http.MethodGet,
		Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>rendered " + u), Time: now, Received: now, Type: "Document"}}}, nil
}

// hidingStore hides every version while hide is set, as if the pages
// were gone from the archive.
type hidingStore struct {
	*archive.Store
	hide atomic.Bool
}

func (h *hidingStore) Versions(ctx context.Context, u string) ([]archive.Version, error) {
	if h.hide.Load() {
		return nil, nil
	}
	return h.Store.Versions(ctx, u)
}

// TestOneRenderPerAnswer: a page offered again with the answer of a
// render in flight waits for it and is served by it; so is one offered
// after it, within RecentRender, while its page is in the archive. A
// changed answer, a failed render, a page gone from the archive and a
// render older than RecentRender do not serve: the page is rendered.
func TestOneRenderPerAnswer(t *testing.T) {
	ctx := context.Background()
	self, _ := identity.Generate()
	store := &hidingStore{Store: openStore(t, self)}
	g := &gatedCapturer{gate: make(chan struct{}), entered: make(chan struct{}, 16), fail: map[string]bool{}}
	rules, err := ParseRules([]byte("http://a.example/\n"))
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	svc := testService(t, self.Peer(), store, func(string) bool { return true })
	svc.cfg.Capturer, svc.cfg.Chooser = g, &Chooser{Rules: rules}
	svc.cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	page := func(u, body string) crawl.BrowserPage {
		return crawl.BrowserPage{URL: u, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)}
	}
	render := func(p crawl.BrowserPage) error {
		// A render the test does not release fails in 20 s.
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		bc, ok := svc.Render(ctx, p)
		if !ok || !bc.Stored || len(bc.Links) != 1 || bc.Links[0] != p.URL+"next" {
			return fmt.Errorf("%s: %+v, %v", p.URL, bc, ok)
		}
		return nil
	}
	want := func(what string, renders, shared int64) {
		t.Helper()
		if got, st := g.renders.Load(), svc.Stats(); got != renders || st.Shared != shared {
			t.Errorf("%s: %d renders, %d shared; want %d, %d", what, got, st.Shared, renders, shared)
		}
	}
	release := func() { <-g.entered; g.gate <- struct{}{} }

	// Two offers of one answer at once: the second waits for the first.
	a := page("http://a.example/1", "<p>one")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = render(a) }()
	<-g.entered
	wg.Add(1)
	go func() { defer wg.Done(); errs[1] = render(a) }()
	if err := testwait.Until(15*time.Second, func() bool { return svc.renders.waited() == 1 }); err != nil {
		t.Fatal("the second offer does not wait for the render in flight")
	}
	g.gate <- struct{}{}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	want("two offers at once", 1, 1)

	// After it: served by it.
	if err := render(a); err != nil {
		t.Fatal(err)
	}
	want("an offer after the render", 1, 2)

	// A changed answer is rendered.
	go release()
	if err := render(page(a.URL, "<p>one, changed")); err != nil {
		t.Fatal(err)
	}
	want("a changed answer", 2, 2)

	// A failed render serves nothing: the next offer renders.
	b := page("http://a.example/2", "<p>two")
	g.fail[b.URL] = true
	go release()
	if err := render(b); err == nil {
		t.Fatal("a failed render stored its page")
	}
	g.fail[b.URL] = false
	go release()
	if err := render(b); err != nil {
		t.Fatal(err)
	}
	want("after a failed render", 4, 2)

	// A page no longer in the archive is rendered again.
	store.hide.Store(true)
	go release()
	if err := render(b); err != nil {
		t.Fatal(err)
	}
	store.hide.Store(false)
	want("a page gone from the archive", 5, 2)

	// Past RecentRender the page is rendered again.
	clock.Add(int64(RecentRender + time.Second))
	go release()
	if err := render(a); err != nil {
		t.Fatal(err)
	}
	want("past RecentRender", 6, 2)
}
