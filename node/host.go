package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
)

// identityFile holds the node's libp2p private key inside the data directory,
// so that its peer id (and with it the ids of its virtual servers) survives
// restarts.
const identityFile = "identity.key"

// loadIdentity reads the node's private key from dir, creating and saving a
// new Ed25519 key on first use. The write is atomic: a crash leaves either no
// key or a complete one.
func loadIdentity(dir string) (crypto.PrivKey, error) {
	p := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(p)
	if err == nil {
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("node identity %s: %w", p, err)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node identity: generate: %w", err)
	}
	b, err = crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node identity: marshal: %w", err)
	}
	if err := writeFileAtomic(p, b, 0o600); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	return k, nil
}

// writeFileAtomic writes b to path through a synced temporary file and a rename.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// newHost starts a libp2p host listening on the TCP address listen
// ("ip:port") and on QUIC at the same ip and port, authenticated with Noise.
// bwc counts the bytes of every stream by protocol.
func newHost(listen string, key crypto.PrivKey, bwc metrics.Reporter) (host.Host, error) {
	ip, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return nil, fmt.Errorf("listen address %q: not an IP address", listen)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("listen address %q: bad port", listen)
	}
	fam := "ip4"
	if parsed.To4() == nil {
		fam = "ip6"
	}
	addrs := []string{fmt.Sprintf("/%s/%s/tcp/%s", fam, ip, port)}
	if port != "0" {
		// QUIC shares the port number only when it is fixed; with port 0 the
		// two transports would pick different ports and the second address
		// would not be derivable from the first.
		addrs = append(addrs, fmt.Sprintf("/%s/%s/udp/%s/quic-v1", fam, ip, port))
	}
	cm, err := connmgr.NewConnManager(64, 256)
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	h, err := libp2p.New(
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(addrs...),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.ConnectionManager(cm),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.BandwidthReporter(bwc),
	)
	if err != nil {
		return nil, fmt.Errorf("libp2p host: %w", err)
	}
	return h, nil
}
