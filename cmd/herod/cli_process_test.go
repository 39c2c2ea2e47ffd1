package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/internal/testwait"
)

// runOnce runs the built herod with args until it exits (within a
// minute) and returns its exit code and stderr.
func runOnce(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("herod %q: %v (did not exit within a minute)\n%s", args, err, stderr.String())
	return 0, ""
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runArgs are the flags of a node that does not collide with others on
// loopback: its own data directory, ports chosen by the kernel for the
// gateway and the replay origin, an operator contact.
func runArgs(dir, listen string) []string {
	return []string{"run", "--data", dir, "--listen", listen, "--gateway", "127.0.0.1:0", "--replay-addr", "127.0.0.1:0",
		"--contact", "https://archive.herod-archive.org/ops"}
}

// oneLine fails t unless stderr is one line holding each of want.
func oneLine(t *testing.T, what string, code int, stderr string, want ...string) {
	t.Helper()
	ok := code == 1 && strings.Count(stderr, "\n") == 1
	for _, w := range want {
		ok = ok && strings.Contains(stderr, w)
	}
	if !ok {
		t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and one line with %q", what, code, stderr, want)
	}
}

// TestProcessRingPortTaken runs the built herod on a ring port another
// program holds (TCP, then UDP, the QUIC port) and on the port of another
// herod, which libp2p's SO_REUSEPORT would share: each run exits 1 with
// one line naming the port and --listen; a second herod on a running
// node's data directory asks whether another herod uses it.
func TestProcessRingPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herod processes")
	}
	r := newProcRing(t, time.Hour)
	dir := t.TempDir()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	code, stderr := runOnce(t, r.bin, runArgs(filepath.Join(dir, "tcp"), ln.Addr().String())...)
	oneLine(t, "TCP port taken", code, stderr, "ring port "+port+" (TCP) is in use", "another program or another herod", "--listen")

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	_, port, _ = net.SplitHostPort(pc.LocalAddr().String())
	code, stderr = runOnce(t, r.bin, runArgs(filepath.Join(dir, "udp"), pc.LocalAddr().String())...)
	if strings.Contains(stderr, "(TCP)") {
		t.Skipf("TCP port %s is taken too on this machine", port)
	}
	oneLine(t, "UDP port taken", code, stderr, "ring port "+port+" (UDP (QUIC)) is in use", "--listen")

	first := r.start(nil, "")
	_, port, _ = net.SplitHostPort(first.listen)
	code, stderr = runOnce(t, r.bin, runArgs(filepath.Join(dir, "second"), first.listen)...)
	oneLine(t, "port of another herod", code, stderr, "ring port "+port+" (TCP) is in use", "--listen")

	code, stderr = runOnce(t, r.bin, runArgs(first.data, freePort(t))...)
	oneLine(t, "data directory of another herod", code, stderr, first.data+" is locked: is another herod using "+first.data+"?")

	// The first node still serves, alone on its port.
	if _, err := status(first); err != nil {
		t.Errorf("the first node stopped answering: %v", err)
	}
}

// TestProcessJoin runs the built herod: a join through an address where
// nothing listens fails in one line, "cannot reach ADDR (connection
// refused)" and what to do; a join through a running node prints through
// whom and how many nodes the ring has; an example contact is warned of.
func TestProcessJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herod processes")
	}
	r := newProcRing(t, time.Hour)
	dir := t.TempDir()

	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(k)
	closed, err := net.Listen("tcp", "127.0.0.99:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.99: %v", err)
	}
	addr := closed.Addr().String()
	closed.Close()
	host, port, _ := net.SplitHostPort(addr)
	join := fmt.Sprintf("/ip4/%s/tcp/%s/p2p/%s", host, port, id)
	code, stderr := runOnce(t, r.bin, append(runArgs(filepath.Join(dir, "lone"), freePort(t)), "--join", join)...)
	oneLine(t, "join through nobody", code, stderr, "cannot reach "+addr+" (connection refused); check --join")
	if len(stderr) > 250 {
		t.Errorf("join error of %d characters: %s", len(stderr), stderr)
	}

	// A URL given after the flags is seeded once the node runs.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<title>seeded</title>"))
	}))
	defer site.Close()
	first := r.start(nil, "")
	args := runArgs(filepath.Join(dir, "second"), freePort(t))
	args[len(args)-1] = "ops@example.org" // --contact
	args = append(args, "--join", first.multiaddr, "--allow-private", "127.0.0.1", site.URL+"/")
	cmd := exec.Command(r.bin, args...)
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var joined, queued string
	timeout := time.After(time.Minute)
	for joined == "" || queued == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("herod exited; stderr:\n%s", errOut.String())
			}
			switch {
			case strings.HasPrefix(l, "joined the ring through "):
				joined = l
			case strings.HasPrefix(l, "queued") || strings.HasPrefix(l, "refused"):
				queued = l
			}
		case <-timeout:
			t.Fatalf("no join and seed lines within a minute (%q, %q); stderr:\n%s", joined, queued, errOut.String())
		}
	}
	if joined != "joined the ring through "+first.listen+": 2 nodes" {
		t.Errorf("join line %q, want through %s: 2 nodes", joined, first.listen)
	}
	if queued != "queued          "+site.URL+"/" {
		t.Errorf("seed line %q, want the URL argument queued", queued)
	}
	testwait.For(t, "the warning of the example contact", 10*time.Second, func() bool {
		return strings.Contains(errOut.String(), `level=WARN msg="--contact ops@example.org is at example.org, a domain that reaches nobody;`)
	})
}
