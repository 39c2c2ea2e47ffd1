package ringpage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestMembersRemembersDownNodes drives Observe with a fake routing state
// and clock: a node that the ring suspects and drops is dead from then
// on, one that disappears unsuspected departed, a dead one that comes
// back is up again, and down nodes are forgotten after Keep.
func TestMembersRemembersDownNodes(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	c := func(i int) ring.Contact {
		return ring.Contact{Peer: "peer" + string(rune('A'+i)), Addr: "127.0.0." + string(rune('1'+i)) + ":4001"}
	}
	n := func(i int) ring.Node { return ring.Node{ID: id.OfString(c(i).Addr), Contact: c(i)} }
	present := []int{1, 2, 3}
	var suspects, left []string
	sv := &Service{
		Status: func() ring.Status {
			v := ring.VnodeStatus{Node: n(0)}
			for _, i := range present {
				v.Successors = append(v.Successors, n(i))
			}
			return ring.Status{Self: c(0), Vnodes: []ring.VnodeStatus{v}, Suspects: suspects, Left: left}
		},
		Clock: func() time.Time { return now },
		Keep:  48 * time.Hour,
	}
	states := func() map[string]Member {
		out := map[string]Member{}
		for _, m := range sv.Members() {
			out[m.Peer] = m
		}
		return out
	}
	sv.Observe()
	if s := states(); len(s) != 3 || s["peerB"].State != StateUp || s["peerD"].State != StateUp {
		t.Fatalf("all present: %+v", s)
	}
	// peerB fails: suspected while still a successor, then dropped.
	now = now.Add(time.Second)
	suspects = []string{"peerB"}
	sv.Observe()
	failed := now
	now = now.Add(time.Second)
	present = []int{2, 3}
	sv.Observe()
	// peerD leaves gracefully: dropped, never suspected.
	now = now.Add(time.Second)
	suspects = nil
	present = []int{2}
	sv.Observe()
	// peerE announces its leave, then calls to it fail: departed.
	now = now.Add(time.Second)
	present = []int{2, 4}
	sv.Observe()
	now = now.Add(time.Second)
	left, suspects = []string{"peerE"}, []string{"peerE"}
	sv.Observe()
	leftAt := now
	now = now.Add(time.Second)
	present = []int{2}
	sv.Observe()
	suspects, left = nil, nil
	s := states()
	if m := s["peerB"]; m.State != StateDead || !m.Since.Equal(failed) || m.Addr != c(1).Addr {
		t.Errorf("failed node: %+v, want dead since %s", m, failed)
	}
	if m := s["peerD"]; m.State != StateDeparted || !m.Since.Equal(leftAt.Add(-2*time.Second)) {
		t.Errorf("node that left: %+v, want departed since %s", m, leftAt.Add(-2*time.Second))
	}
	if m := s["peerC"]; m.State != StateUp {
		t.Errorf("node still there: %+v", m)
	}
	if m := s["peerE"]; m.State != StateDeparted || !m.Since.Equal(leftAt) {
		t.Errorf("node that announced its leave: %+v, want departed since %s", m, leftAt)
	}
	// A day later both are still listed; peerB comes back up.
	now = now.Add(24 * time.Hour)
	present = []int{1, 2}
	sv.Observe()
	if s := states(); s["peerB"].State != StateUp || !s["peerB"].Since.Equal(now) || s["peerD"].State != StateDeparted {
		t.Errorf("a day later: %+v", s)
	}
	// After Keep the departed nodes are forgotten.
	now = now.Add(25 * time.Hour)
	sv.Observe()
	if s := states(); len(s) != 2 {
		t.Errorf("after Keep: %+v, want the departed node forgotten", s)
	}
}

// TestMembersKeptAcrossRestarts: the dead and departed nodes are written
// to Path and listed again by a Service started afresh on it (the node
// restarted), until they come back or Keep passes; a damaged file is an
// empty memory.
func TestMembersKeptAcrossRestarts(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), DownFile)
	var present []ring.Node
	var suspects []string
	mk := func() *Service {
		return &Service{
			Status: func() ring.Status {
				return ring.Status{Self: ring.Contact{Peer: "self"}, Vnodes: []ring.VnodeStatus{{Successors: present}}, Suspects: suspects}
			},
			Clock: func() time.Time { return now },
			Path:  path,
		}
	}
	b := ring.Node{ID: id.OfString("b"), Contact: ring.Contact{Peer: "peerB", Addr: "127.0.0.2:4001"}}
	c := ring.Node{ID: id.OfString("c"), Contact: ring.Contact{Peer: "peerC", Addr: "127.0.0.3:4001"}}
	first := mk()
	present = []ring.Node{b, c}
	first.Observe()
	now = now.Add(time.Second)
	present, suspects = []ring.Node{c}, []string{"peerB"}
	first.Observe()
	died := now
	suspects = nil
	// Restarted: a fresh Service on the same file, whose ring knows c only.
	now = now.Add(time.Hour)
	again := mk()
	again.Observe()
	got := map[string]Member{}
	for _, m := range again.Members() {
		got[m.Peer] = m
	}
	if m := got["peerB"]; m.State != StateDead || !m.Since.Equal(died) || m.Addr != b.Addr {
		t.Errorf("after a restart: %+v, want peerB dead since %s", got, died)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := mk()
	damaged.Observe()
	if ms := damaged.Members(); len(ms) != 1 || ms[0].Peer != "peerC" {
		t.Errorf("damaged file: %+v", ms)
	}
}
