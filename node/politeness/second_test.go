package politeness

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// succRing is a ring where this node owns no key and every key's owner
// and successors are succs.
type succRing struct {
	self  ring.Contact
	succs []ring.Node
}

func (r succRing) Owns(id.ID) bool { return false }

func (r succRing) Disowned(id.ID, ring.Contact) {}

func (r succRing) Lookup(context.Context, id.ID) (ring.Node, error) { return r.succs[0], nil }

func (r succRing) Successors(_ context.Context, _ id.ID, k int) ([]ring.Node, error) {
	return r.succs[:min(k, len(r.succs))], nil
}

func (r succRing) Status() ring.Status { return ring.Status{Self: r.self} }

// TestAnswerRobotsSecond: a node answers a robots.txt request for a key it
// does not own only when asked as second holder and, by its own view, it
// is one of the two real nodes after the owner.
func TestAnswerRobotsSecond(t *testing.T) {
	self := ring.Contact{Peer: "self"}
	node := func(p string) ring.Node { return ring.Node{Contact: ring.Contact{Peer: p}} }
	for _, c := range []struct {
		name   string
		succs  []ring.Node
		second bool
		served bool
	}{
		{"not asked as second", []ring.Node{node("o"), {Contact: self}}, false, false},
		{"next after the owner", []ring.Node{node("o"), {Contact: self}}, true, true},
		{"second after the owner", []ring.Node{node("o"), node("a"), {Contact: self}}, true, true},
		{"further away", []ring.Node{node("o"), node("a"), node("b"), {Contact: self}}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fetched := 0
			p := New(Config{Self: self, Ring: succRing{self, c.succs}, Peers: unreachable{},
				Local: func(context.Context, string) (crawl.RobotsRecord, error) {
					fetched++
					return crawl.RobotsRecord{Status: http.StatusOK, Body: []byte("User-agent: *\nDisallow: /x\n")}, nil
				}})
			rep := p.answerRobots(context.Background(), RobotsRequest{Origin: "http://example.org", Second: c.second})
			if served := rep.Error == "" && rep.Record.Status == http.StatusOK; served != c.served {
				t.Fatalf("served %v (%+v), want %v", served, rep, c.served)
			}
			if !c.served && (fetched != 0 || !strings.Contains(rep.Error, "not owned")) {
				t.Fatalf("refusal %q after %d fetches", rep.Error, fetched)
			}
		})
	}
}
