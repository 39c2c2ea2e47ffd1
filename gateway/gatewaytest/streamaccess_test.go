package gatewaytest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/gateway"
)

// tableRules is an AccessControl over an access.Table whose rules are
// fixed (the admin calls are not used here).
type tableRules struct{ *access.Table }

func (tableRules) Add(context.Context, access.Rule, bool) error { return nil }
func (tableRules) Remove(context.Context, string, bool) (int, error) {
	return 0, nil
}

// TestStreamedRespectsAccess: a raw capture large enough to be streamed
// from its segment file is still answered 451 when an access rule blocks
// it, while a shown one next to it is streamed.
func TestStreamedRespectsAccess(t *testing.T) {
	ctx := context.Background()
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	when := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	big := bytes.Repeat([]byte("a large archived document, "), 2<<20/27)
	const blocked, shown = "http://big.example/blocked.bin", "http://big.example/shown.bin"
	for _, u := range []string{blocked, shown} {
		if _, _, err := st.Put(ctx, archive.Capture{URL: u, Time: when, Status: 200,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: big}); err != nil {
			t.Fatal(err)
		}
	}
	tab := access.NewTable(nil)
	if errs := tab.Replace(access.Local, []access.Rule{{URL: blocked, Exact: true, Action: access.Block, Reason: "a privacy request"}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	ui, content := listenPair(t)
	gw, err := gateway.New(gateway.Config{Archive: streamArchive{st}, Access: tableRules{tab},
		UIOrigin: ":" + lnPort(ui), ContentOrigin: ":" + lnPort(content), Limits: gateway.Limits{SpoolDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw.Content(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(content)
	defer srv.Close()
	ui.Close()
	base := "http://" + content.Addr().String() + "/web/" + gateway.FormatTimestamp(when) + "id_/"
	get := func(u string) (int, []byte) {
		resp, err := http.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	if code, body := get(blocked); code != http.StatusUnavailableForLegalReasons || bytes.Contains(body, big[:64]) {
		t.Errorf("blocked capture: %d, %d bytes; want 451 without its bytes", code, len(body))
	}
	if code, body := get(shown); code != http.StatusOK || !bytes.Equal(body, big) {
		t.Errorf("shown capture: %d, %d bytes; want 200 and its %d bytes", code, len(body), len(big))
	}
	if s := gw.Stats(); s.Streamed != 1 {
		t.Errorf("streamed %d replies, want 1 (the shown capture)", s.Streamed)
	}
}
