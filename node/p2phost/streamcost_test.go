package p2phost

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// benchProtocol answers a frame whose first 4 bytes give the size of the
// reply frame.
const benchProtocol = protocol.ID("/herod/bench/stream/1.0.0")

// processCPU is this process's user plus system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// freePort returns a port free on 127.0.0.1 for both TCP and UDP, as far
// as binding both at once tells.
func freePort(b testing.TB) string {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
		u, err := net.ListenPacket("udp", "127.0.0.1:"+port)
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	b.Fatal("no port free on both TCP and UDP")
	return ""
}

// benchHosts starts two hosts on loopback, the second answering
// benchProtocol, and connects the first to it over transport ("tcp" or
// "udp", QUIC). It returns the first, then the second.
func benchHosts(b *testing.B, transport string) (host.Host, host.Host) {
	var hs [2]host.Host
	for i := range hs {
		h, err := New("127.0.0.1:"+freePort(b), testKeyB(b), metrics.NewBandwidthCounter(), prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		hs[i] = h
	}
	hs[1].SetStreamHandler(benchProtocol, func(s network.Stream) {
		defer s.Close()
		req, err := wire.ReadFrame(bufio.NewReader(s), 1<<20)
		if err != nil || len(req) < 4 {
			s.Reset()
			return
		}
		if err := wire.WriteFrame(s, make([]byte, binary.BigEndian.Uint32(req))); err != nil {
			s.Reset()
		}
	})
	var addrs []ma.Multiaddr
	for _, a := range hs[1].Addrs() {
		if _, err := a.ValueForProtocol(ma.P_TCP); (err == nil) == (transport == "tcp") {
			addrs = append(addrs, a)
		}
	}
	if err := hs[0].Connect(context.Background(), peer.AddrInfo{ID: hs[1].ID(), Addrs: addrs}); err != nil {
		b.Fatal(err)
	}
	return hs[0], hs[1]
}

// roundTrip opens one stream, sends a request of req bytes asking for a
// reply of rep bytes, and reads the reply.
func roundTrip(b *testing.B, h host.Host, p peer.ID, req, rep int) {
	s, err := h.NewStream(context.Background(), p, benchProtocol)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	msg := make([]byte, max(req, 4))
	binary.BigEndian.PutUint32(msg, uint32(rep))
	if err := wire.WriteFrame(s, msg); err != nil {
		b.Fatal(err)
	}
	_ = s.CloseWrite()
	got, err := wire.ReadFrame(bufio.NewReader(s), 1<<20)
	if err != nil || len(got) != rep {
		b.Fatalf("reply of %d bytes, %v; want %d", len(got), err, rep)
	}
}

// BenchmarkPushRoundTrips measures, on two hosts in this process over
// loopback (both ends' CPU counted), what a push of one offer costs in
// streams: "offer+read" is an offer naming its records (200 bytes, a
// 2-byte answer) and the replica's read of them (a 64-byte request,
// a reply of the records: 14 records of 4 KB, a crawl's average
// offer), each a stream of its own; "carried" is one stream whose
// request carries the records (OpOfferStored); "small" is one stream of
// 100 bytes each way (a lease, a claim). It reports CPU µs per offer (or
// small exchange), over TCP (Noise, yamux) and QUIC.
//
//	go test ./node/p2phost -run '^$' -bench PushRoundTrips -benchtime 2000x
func BenchmarkPushRoundTrips(b *testing.B) {
	const records = 14 * 4096
	for _, tr := range []string{"tcp", "udp"} {
		h, server := benchHosts(b, tr)
		p := server.ID()
		for _, c := range []struct {
			name string
			push func()
		}{
			{"offer+read", func() { roundTrip(b, h, p, 200, 2); roundTrip(b, h, p, 64, records) }},
			{"carried", func() { roundTrip(b, h, p, 200+records, 2) }},
			{"small", func() { roundTrip(b, h, p, 100, 100) }}, // a lease, a claim: one stream's fixed cost
		} {
			b.Run(tr+"/"+c.name, func(b *testing.B) {
				c.push() // the connection and protocol negotiated
				cpu0 := processCPU(b)
				for b.Loop() {
					c.push()
				}
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/offer")
			})
		}
	}
}

// BenchmarkSessionExchange measures a small exchange (100 bytes each way:
// a claim, a lease) through the node's kit on both ends: "stream" opens a
// stream for each exchange, as every node protocol did before sessions
// (kit.OpenExchanger, a protocol without Session); "session" sends them
// one after another through a kit.Pool to a session protocol, on a
// stream it keeps. CPU µs per exchange, both ends, over TCP (Noise,
// yamux) and QUIC.
//
//	go test ./node/p2phost -run '^$' -bench SessionExchange -benchtime 3000x
func BenchmarkSessionExchange(b *testing.B) {
	echo := func(_ context.Context, q *kit.Request) error {
		req, err := q.ReadFrame(0)
		if err != nil {
			return err
		}
		return wire.WriteFrame(q.Stream(), req)
	}
	for _, tr := range []string{"tcp", "udp"} {
		h, server := benchHosts(b, tr)
		p := server.ID()
		k := kit.New(kit.Config{Host: server, Gate: func(s network.Stream) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
		}})
		const oneShot, session = protocol.ID("/herod/bench/oneshot/1.0.0"), protocol.ID("/herod/bench/session/1.0.0")
		k.MustHandle(kit.Spec{ID: oneShot, Handle: echo, MaxFrame: 1 << 10})
		k.MustHandle(kit.Spec{ID: session, Handle: echo, MaxFrame: 1 << 10, Session: true})
		open := func(ctx context.Context, _ ring.Contact, proto protocol.ID) (network.Stream, error) {
			return h.NewStream(ctx, p, proto)
		}
		pool := kit.NewPool(open, 10*time.Second)
		b.Cleanup(func() { pool.Close() })
		msg := make([]byte, 100)
		to := ring.Contact{Peer: p.String()}
		for _, c := range []struct {
			name  string
			x     kit.Exchanger
			proto protocol.ID
		}{
			{"stream", kit.OpenExchanger(open), oneShot},
			{"session", pool.Exchange, session},
		} {
			ask := func() {
				err := c.x(context.Background(), to, c.proto, func(s network.Stream, r *bufio.Reader) error {
					if err := wire.WriteFrame(s, msg); err != nil {
						return err
					}
					_, err := wire.ReadFrame(r, 1<<10)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.Run(tr+"/"+c.name, func(b *testing.B) {
				ask() // the connection and protocol negotiated
				cpu0 := processCPU(b)
				for b.Loop() {
					ask()
				}
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/exchange")
			})
		}
	}
}

func testKeyB(b *testing.B) crypto.PrivKey {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return k
}
