package gatewaytest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/herod-archive/herod/gateway"
)

// replayServers serves a gateway over a for BenchmarkReplayView, as a
// node does (the UI and content origins on two loopback ports), and
// returns the URL readers open.
func replayServers(tb testing.TB, a gateway.Archive) string {
	tb.Helper()
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns[i] = ln
	}
	port := func(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }
	gw, err := gateway.New(gateway.Config{Archive: a, UIOrigin: ":" + port(lns[0]), ContentOrigin: ":" + port(lns[1])})
	if err != nil {
		tb.Fatal(err)
	}
	for i, h := range []http.Handler{gw.UI(), gw.Content()} {
		srv := &httptest.Server{Listener: lns[i], Config: &http.Server{Handler: h}}
		srv.Start()
		tb.Cleanup(srv.Close)
	}
	return "http://" + lns[0].Addr().String()
}
