package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/herod-archive/herod/gateway"
)

// setupGateway opens the gateway's two listeners (the UI origin and the
// content origin that replays archived pages), loads or creates the admin
// token in the data directory, and builds the gateway.
func (n *Node) setupGateway() error {
	cfg := n.cfg
	gwBase := n.self.Addr
	if n.reach != ReachListen {
		gwBase = cfg.Listen // behind NAT the gateway listens beside the ring port, not at the router's address
	}
	gwAddr, err := cfg.gatewayAddr(gwBase)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.gwLn, err = net.Listen("tcp", gwAddr); err != nil {
		return fmt.Errorf("node: gateway listen: %w", err)
	}
	// From the configured gateway address, not the bound one: a gateway on
	// port 0 gets a replay port of its own choosing too, never a guess at
	// a neighbouring port that may be taken.
	rpAddr, err := cfg.replayAddr(gwAddr)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.rpLn, err = net.Listen("tcp", rpAddr); err != nil {
		return fmt.Errorf("node: replay listen: %w", err)
	}
	token, err := gateway.LoadAdminToken(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	lim := cfg.GatewayLimits
	if lim.SpoolDir == "" {
		lim.SpoolDir = filepath.Join(cfg.DataDir, "spool")
		if err := os.MkdirAll(lim.SpoolDir, 0o700); err != nil {
			return fmt.Errorf("node: gateway spool: %w", err)
		}
	}
	var robots gateway.RobotsPolicy
	if cfg.ReplayRobots {
		robots = n.crawler
	}
	n.gw, err = gateway.New(gateway.Config{
		Archive:       n.readerArchive(),
		Provenance:    n.provenance,
		Status:        func(ctx context.Context) any { return n.Status() },
		Ring:          n.ringpage.View,
		Metrics:       n.metricsHandler(),
		Logger:        n.log.With("sub", "gateway"),
		UIOrigin:      originOf(cfg.GatewayOrigin, n.gwLn),
		ContentOrigin: originOf(cfg.ReplayOrigin, n.rpLn),
		Frameless:     cfg.Frameless,
		AdminToken:    token,
		Seed:          n.SeedEach,
		Purge:         n.Purge,
		Import:        n.ImportUpload,
		Access:        n.access,
		Robots:        robots,
		Search:        n.search,        // search.go
		LinkIndex:     gatewayLinks{n}, // linkindex.go
		PublicStatus:  cfg.PublicStatus,
		Limits:        lim,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.httpSrv = &http.Server{Handler: n.gw.UI(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	n.rpSrv = &http.Server{Handler: n.gw.Content(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	return nil
}

// originOf returns the gateway origin spec of a listener: the configured
// origin, or ":port" (the host name a request came with, this port).
func originOf(configured string, ln net.Listener) string {
	if configured != "" {
		return configured
	}
	return ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// serveGateway serves both origins until closeGateway.
func (n *Node) serveGateway() {
	for _, s := range []struct {
		srv  *http.Server
		ln   net.Listener
		name string
	}{{n.httpSrv, n.gwLn, "gateway"}, {n.rpSrv, n.rpLn, "replay"}} {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.Error(s.name+" stopped", "err", err)
			}
		}()
	}
}

// closeGateway stops both origins (or closes their listeners, when the
// node never started serving).
func (n *Node) closeGateway() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{n.httpSrv, n.gwLn}, {n.rpSrv, n.rpLn}} {
		if s.srv != nil {
			_ = s.srv.Shutdown(ctx)
		}
		if s.ln != nil {
			s.ln.Close() // not served yet, or already closed by Shutdown
		}
	}
}

// GatewayURL returns the base URL of the node's gateway (its UI origin):
// the address to open in a browser.
func (n *Node) GatewayURL() string { return "http://" + n.gwLn.Addr().String() + "/" }

// ReplayURL returns the base URL of the gateway's content origin, which
// serves archived pages inside the gateway's frame.
func (n *Node) ReplayURL() string { return "http://" + n.rpLn.Addr().String() + "/" }
