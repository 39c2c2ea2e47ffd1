package p2phost

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// TestNewRefusesTakenPort starts a host on a port another socket holds —
// a plain TCP listener, a UDP socket, another host (whose sockets reuse
// the port) — and gets a PortInUseError naming the port and transport;
// on a free port it starts, listening on TCP and QUIC.
func TestNewRefusesTakenPort(t *testing.T) {
	newHost := func(listen string) error {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(listen, k, metrics.NewBandwidthCounter(), prometheus.NewRegistry())
		if err == nil {
			h.Close()
		}
		return err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	k, _, _ := crypto.GenerateEd25519Key(nil)
	free := freeBoth(t)
	other, err := New(free, k, metrics.NewBandwidthCounter(), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("host on a free port: %v", err)
	}
	defer other.Close()
	if err := checkListening(other, free); err != nil {
		t.Errorf("host on a free port: %v", err)
	}
	for _, tc := range []struct{ listen, network string }{
		{ln.Addr().String(), "TCP"},
		{pc.LocalAddr().String(), "UDP (QUIC)"},
		{free, "TCP"},
	} {
		err := newHost(tc.listen)
		var pe *PortInUseError
		_, port, _ := net.SplitHostPort(tc.listen)
		if !errors.As(err, &pe) || pe.Network != tc.network && !(tc.network == "UDP (QUIC)" && pe.Network == "TCP") ||
			!strings.Contains(err.Error(), "ring port "+port+" ("+pe.Network+") is in use") {
			t.Errorf("%s (%s taken): %v", tc.listen, tc.network, err)
		}
	}
}

// freeBoth returns a loopback address whose port is free on TCP and UDP.
func freeBoth(t *testing.T) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		pc, err := net.ListenPacket("udp4", addr)
		ln.Close()
		if err == nil {
			pc.Close()
			return addr
		}
	}
	t.Fatal("no port free on both TCP and UDP")
	return ""
}
