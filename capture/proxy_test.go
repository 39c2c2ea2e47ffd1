package capture

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
)

// TestProxyRefusesInternal checks the proxy alone, without a browser: a
// CONNECT and a plain request to 127.0.0.2 are refused before any
// connection although permitted, a plain request to the allowed
// 127.0.0.1 goes through, and one to a host:port never permitted is
// refused.
func TestProxyRefusesInternal(t *testing.T) {
	var hits atomic.Int64
	forbidden, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no listener on 127.0.0.2: %v", err)
	}
	defer forbidden.Close()
	go func() {
		for {
			nc, err := forbidden.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			nc.Close()
		}
	}()
	okSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") })}
	okLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go okSrv.Serve(okLn)
	defer okSrv.Close()

	p, err := startProxy([]netip.Prefix{loopback}, noNames)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, a := range []string{forbidden.Addr().String(), okLn.Addr().String()} {
		p.permit(&url.URL{Scheme: "http", Host: a})
	}
	pu, _ := url.Parse("http://" + p.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}

	resp, err := client.Get("http://" + forbidden.Addr().String() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("plain request to 127.0.0.2: %d, want 502", resp.StatusCode)
	}

	nc, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", forbidden.Addr())
	cr, err := http.ReadResponse(bufio.NewReader(nc), nil)
	nc.Close()
	if err != nil || cr.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to 127.0.0.2: %v %v, want 403", cr, err)
	}

	resp, err = client.Get("http://" + okLn.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "fine" {
		t.Errorf("allowed request: %d %q", resp.StatusCode, b)
	}
	resp, err = client.Get("http://127.0.0.1:1/never-requested")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("request to a host the page did not request: %d, want 502", resp.StatusCode)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the forbidden listener accepted %d connections", n)
	}
	if n := len(p.Refused()); n != 3 {
		t.Errorf("%d refusals counted, want 3", n)
	}
}
