package p2phost

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/libp2p/go-libp2p/core/host"
)

// PortInUseError reports a ring port this node cannot have to itself.
// libp2p binds its TCP and QUIC sockets with SO_REUSEPORT, so a second
// herod on the same port would share it (the kernel splitting ring
// connections between two peers), and with another program on one of
// the two a host would start on the other alone; New refuses both.
type PortInUseError struct {
	Addr    string // the listen address, ip:port
	Network string // "TCP" or "UDP (QUIC)"
	Err     error
}

func (e *PortInUseError) Error() string {
	_, port, _ := net.SplitHostPort(e.Addr)
	return fmt.Sprintf("ring port %s (%s) is in use at %s: another program or another herod holds it", port, e.Network, e.Addr)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// probePorts binds the TCP and UDP port of listen exclusively (without
// SO_REUSEPORT) and releases them: a socket any other process holds there,
// reuse-port or not, makes the bind fail. It returns a *PortInUseError
// for a port in use, another error for any other failure.
//
// The family is the listen address's, as libp2p binds it: an IPv6 address
// is probed IPv6-only, so an IPv4 socket on the same port does not count.
func probePorts(listen string) error {
	fam := "4"
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
			fam = "6"
		}
	}
	ln, err := net.Listen("tcp"+fam, listen)
	if err != nil {
		return bindError(listen, "TCP", err)
	}
	ln.Close()
	pc, err := net.ListenPacket("udp"+fam, listen)
	if err != nil {
		return bindError(listen, "UDP (QUIC)", err)
	}
	pc.Close()
	return nil
}

func bindError(listen, network string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return &PortInUseError{Addr: listen, Network: network, Err: err}
	}
	return fmt.Errorf("listen address %s (%s): %w", listen, network, err)
}

// checkListening returns a *PortInUseError unless h listens on both TCP
// and QUIC: libp2p starts a host when at least one of its addresses
// could be bound.
func checkListening(h host.Host, listen string) error {
	var tcp, quic bool
	for _, a := range h.Network().ListenAddresses() {
		s := a.String()
		tcp = tcp || strings.Contains(s, "/tcp/")
		quic = quic || strings.Contains(s, "/quic-v1")
	}
	switch {
	case !tcp:
		return &PortInUseError{Addr: listen, Network: "TCP", Err: syscall.EADDRINUSE}
	case !quic:
		return &PortInUseError{Addr: listen, Network: "UDP (QUIC)", Err: syscall.EADDRINUSE}
	}
	return nil
}
