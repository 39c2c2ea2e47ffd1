package node

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/throttle"
	"github.com/herod-archive/herod/node/status"
)

// bandwidth holds a node's byte-rate caps (Config.DownloadRate,
// UploadRate and ReplicationShare). The crawler reads its response bodies
// through down; replication reads the replies it pulls through replDown
// and down, and writes the replies it serves through replUp and up. A nil
// limiter is no cap.
type bandwidth struct {
	down, up         *throttle.Limiter
	replDown, replUp *throttle.Limiter
}

// newBandwidth builds the limiters of cfg (defaults applied).
func newBandwidth(cfg Config) (bandwidth, error) {
	var b bandwidth
	var err error
	share := func(r int64) int64 {
		if r == 0 {
			return 0
		}
		return max(1, int64(float64(r)*cfg.ReplicationShare))
	}
	if b.down, err = throttle.New(cfg.DownloadRate); err != nil {
		return b, fmt.Errorf("node: download cap: %w", err)
	}
	if b.up, err = throttle.New(cfg.UploadRate); err != nil {
		return b, fmt.Errorf("node: upload cap: %w", err)
	}
	if b.replDown, err = throttle.New(share(cfg.DownloadRate)); err != nil {
		return b, fmt.Errorf("node: replication download cap: %w", err)
	}
	if b.replUp, err = throttle.New(share(cfg.UploadRate)); err != nil {
		return b, fmt.Errorf("node: replication upload cap: %w", err)
	}
	return b, nil
}

// replyWriter returns the writer a replication reply of size bytes is
// written to s through: throttled by the upload caps, with the stream's
// write deadline moved out by the time the caps need for it, so that a
// version file larger than the stream timeout's worth of the cap still
// gets through.
func (b bandwidth) replyWriter(s network.Stream, size int) io.Writer {
	slowest := b.replUp.Rate()
	if r := b.up.Rate(); r > 0 && (slowest == 0 || r < slowest) {
		slowest = r
	}
	if slowest == 0 {
		return s
	}
	extra := time.Duration(float64(size) / float64(slowest) * float64(time.Second))
	_ = s.SetWriteDeadline(time.Now().Add(streamTimeout + extra))
	return throttle.Writer(context.Background(), s, b.replUp, b.up)
}

// caps returns the caps as /metrics exports them (status.Collector.Caps).
func (b bandwidth) caps() []status.Cap {
	return []status.Cap{{Dir: "down", Use: "all", Rate: b.down.Rate()}, {Dir: "up", Use: "all", Rate: b.up.Rate()},
		{Dir: "down", Use: "replication", Rate: b.replDown.Rate()}, {Dir: "up", Use: "replication", Rate: b.replUp.Rate()}}
}
