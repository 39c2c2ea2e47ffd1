package node

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// TestReplayStreamsLocalCaptures: a node's gateway serves the raw replay
// of a large capture it holds, and the replay of a large image, straight
// from its segment file (status load.streamed), byte for byte; a large
// HTML page it rewrites is not streamed.
func TestReplayStreamsLocalCaptures(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lr := startStableRing(ctx, t, t.TempDir(), 2, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond, NoSync: true})
	defer lr.Close()
	n := lr.Nodes[0]
	at := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	page := bytes.Repeat([]byte("<p>a large page of words</p>\n"), 40000)
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 1, 2, 3, 4}, 150000)
	for _, c := range []archive.Capture{
		{URL: "http://s.example/page.html", Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: page},
		{URL: "http://s.example/img.png", Time: at, Status: 200, Header: http.Header{"Content-Type": {"image/png"}}, Body: img},
	} {
		if _, _, err := n.store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ts := gateway.FormatTimestamp(at)
	for _, c := range []struct {
		path     string
		want     []byte
		streamed int64
	}{
		{"web/" + ts + "id_/http://s.example/page.html", page, 1},
		{"web/" + ts + "im_/http://s.example/img.png", img, 2},
		{"web/" + ts + "/http://s.example/page.html", nil, 2},
	} {
		resp, err := http.Get(n.ReplayURL() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || (c.want != nil && !bytes.Equal(body, c.want)) {
			t.Fatalf("%s: %d, %d bytes, %v", c.path, resp.StatusCode, len(body), err)
		}
		if got := n.Status().Load.Streamed; got != c.streamed {
			t.Errorf("after %s: %d replies streamed, want %d", c.path, got, c.streamed)
		}
	}
}
