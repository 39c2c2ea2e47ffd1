package gatewaytest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/herod-archive/herod/gateway"
)

// The origins of gateways that tests serve through ServeHTTP alone.
const (
	uiHost      = "http://gw.test"
	contentHost = "http://content.test"
)

// hostOrigins sets cfg's origins to uiHost and contentHost.
func hostOrigins(cfg gateway.Config) gateway.Config {
	cfg.UIOrigin, cfg.ContentOrigin = uiHost, contentHost
	return cfg
}

// served is a request a test gateway answered.
type served struct {
	Origin string // "ui" or "content"
	URI    string
	Header http.Header
	Status int
}

// reqLog records the requests a test gateway answered.
type reqLog struct {
	mu   sync.Mutex
	reqs []served
}

func (l *reqLog) wrap(origin string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		l.reqs = append(l.reqs, served{Origin: origin, URI: r.RequestURI, Header: r.Header.Clone(), Status: sw.status})
		l.mu.Unlock()
	})
}

// all returns a copy of the log.
func (l *reqLog) all() []served {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]served(nil), l.reqs...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// serveGateway serves a gateway made from cfg on two loopback listeners,
// its UI and content origins (":port" specs, so that a browser reaches
// them as 127.0.0.1:port), and returns their base URLs, the gateway and
// the log of the requests they answered.
func serveGateway(t testing.TB, cfg gateway.Config) (ui, content string, gw *gateway.Server, log *reqLog) {
	t.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	port := func(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }
	cfg.UIOrigin, cfg.ContentOrigin = ":"+port(lns[0]), ":"+port(lns[1])
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log = &reqLog{}
	for i, h := range []http.Handler{log.wrap("ui", gw.UI()), log.wrap("content", gw.Content())} {
		srv := &httptest.Server{Listener: lns[i], Config: &http.Server{Handler: h}}
		srv.Start()
		t.Cleanup(srv.Close)
	}
	return "http://" + lns[0].Addr().String(), "http://" + lns[1].Addr().String(), gw, log
}
