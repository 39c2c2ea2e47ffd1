package capture

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TestToArchiveRequestHead checks the request head ToArchive gives each
// capture: the request line with the request-URI, Host first, then the
// fields the browser reported in name order; a field that would break
// the head, or a head over archive.MaxRequestHead, gives none.
func TestToArchiveRequestHead(t *testing.T) {
	now := time.Now()
	ex := func(u string, h http.Header) Exchange {
		return Exchange{URL: u, Method: http.MethodGet, RequestHeader: h, Status: 200, Header: http.Header{}, Body: []byte("x"), Received: now}
	}
	r := &Result{Exchanges: []Exchange{
		ex("http://example.org:8080/a/b?q=1&r=2#frag", http.Header{
			"User-Agent": {"Mozilla/5.0 test"}, "Referer": {"http://example.org:8080/"},
			"Accept": {"*/*"}, "Host": {"ignored.example"}, ":authority": {"ignored.example"},
		}),
		ex("http://example.org/evil", http.Header{"X-Evil": {"a\r\nX-Injected: 1"}}),
		ex("http://example.org/big", http.Header{"X-Big": {strings.Repeat("b", archive.MaxRequestHead)}}),
		ex("http://example.org/none", nil),
	}}
	sent := ex("http://example.org/sent", http.Header{"User-Agent": {"ua"}})
	sent.SentHeader = http.Header{":authority": {"example.org"}, ":path": {"/sent"}, "Host": {"example.org"},
		"User-Agent": {"ua"}, "Accept-Encoding": {"gzip, deflate, br"}, "Cookie": {"a=1"}}
	r.Exchanges = append(r.Exchanges, sent)
	caps := r.ToArchive()
	if len(caps) != 5 {
		t.Fatalf("%d captures, want 5", len(caps))
	}
	want := "GET /a/b?q=1&r=2 HTTP/1.1\r\nHost: example.org:8080\r\nAccept: */*\r\n" +
		"Referer: http://example.org:8080/\r\nUser-Agent: Mozilla/5.0 test\r\n\r\n"
	if got := string(caps[0].Request); got != want {
		t.Errorf("head %q, want %q", got, want)
	}
	for _, i := range []int{1, 2} {
		if caps[i].Request != nil {
			t.Errorf("%s: head %q kept", caps[i].URL, caps[i].Request)
		}
	}
	if got := string(caps[3].Request); got != "GET /none HTTP/1.1\r\nHost: example.org\r\n\r\n" {
		t.Errorf("head without fields %q", got)
	}
	// The headers as sent, when the browser reported them, are used.
	want = "GET /sent HTTP/1.1\r\nHost: example.org\r\nAccept-Encoding: gzip, deflate, br\r\nCookie: a=1\r\nUser-Agent: ua\r\n\r\n"
	if got := string(caps[4].Request); got != want {
		t.Errorf("head from the sent headers %q, want %q", got, want)
	}
}
