package claim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// TestDecide runs the claim decision over states, without a transport,
// a clock or a mutex: each case is what the node knows at one point of
// answering and the step it must take next.
func TestDecide(t *testing.T) {
	claimer, self, other := vnode(1), vnode(2), vnode(3)
	f1, f2 := vnode(4), vnode(5)
	q := Request{URL: "https://example.org/a", Day: 7, Vnode: claimer, To: self.ID}
	along := q // a claim passed on along a chain, by other for claimer
	along.Vnode, along.Hops, along.Chain = other, 1, []string{claimer.Peer, other.Peer}
	cut := q
	cut.Hops = 4
	loop := along
	loop.Chain = []string{claimer.Peer, self.Peer, other.Peer}
	base := answerState{self: self.Peer, maxHops: 4, day: 7, ours: self}
	with := func(f func(*answerState)) answerState { s := base; f(&s); return s }
	next := f2
	refused := fmt.Errorf("reset: %w", ErrRefused)
	ch := []string{claimer.Peer, self.Peer}

	tests := []struct {
		name string
		q    Request
		from ring.Node
		st   answerState
		want action
	}{
		{"elsewhere by our view", q, claimer, with(func(s *answerState) { s.elsewhere = true }),
			action{step: stepReply, reply: Reply{Elsewhere: true}}},
		{"another day", Request{URL: q.URL, Day: 6, Vnode: claimer}, claimer, base,
			action{step: stepReply}},
		{"twin of our predecessor", q, claimer, with(func(s *answerState) { s.twin = true }),
			action{step: stepReply, reply: Reply{Elsewhere: true}}},
		{"twin does not matter along a chain", along, other, with(func(s *answerState) { s.twin = true }),
			action{step: stepHistory}},
		{"fetched here", q, claimer, with(func(s *answerState) { s.held.mine = true }),
			action{step: stepReply, reply: Reply{Taken: true}}},
		{"fetched by a former owner", q, claimer, with(func(s *answerState) { s.held.had = true }),
			action{step: stepReply, reply: Reply{Taken: true}}},
		{"granted to another claimer", q, claimer, with(func(s *answerState) {
			s.held.gone, s.held.grant = true, awayClaim{vnode: other, claimer: other.Peer}
		}), action{step: stepReply, reply: Reply{Taken: true}}},
		{"granted to the same claimer along a chain", q, claimer, with(func(s *answerState) {
			s.held.gone, s.held.grant = true, awayClaim{vnode: other, claimer: claimer.Peer}
		}), action{step: stepHistory}},
		{"ask the oldest former owner first", q, claimer, with(func(s *answerState) { s.formers = []ring.Node{f1, f2} }),
			action{step: stepAsk, former: f1, ask: Request{URL: q.URL, Day: 7, Vnode: self, To: f1.ID, Hops: 1, Chain: ch}}},
		{"then the next", q, claimer, with(func(s *answerState) {
			s.formers, s.replies = []ring.Node{f1, f2}, []chainReply{{}}
		}), action{step: stepAsk, former: f2, ask: Request{URL: q.URL, Day: 7, Vnode: self, To: f2.ID, Hops: 1, Chain: ch}}},
		{"taken along the chain stops the asking", q, claimer, with(func(s *answerState) {
			s.formers, s.replies = []ring.Node{f1, f2}, []chainReply{{rep: Reply{Taken: true}}}
		}), action{step: stepReply, reply: Reply{Taken: true}, markHad: true}},
		{"an unanswered former owner counts as not taken", q, claimer, with(func(s *answerState) {
			s.formers, s.replies = []ring.Node{f1}, []chainReply{{err: errors.New("timeout")}}
		}), action{step: stepHistory}},
		{"past MaxHops the chain is cut", cut, claimer, with(func(s *answerState) { s.formers = []ring.Node{f1} }),
			action{step: stepHistory, cut: true}},
		{"a loop is not a cut", Request{URL: q.URL, Day: 7, Vnode: claimer, Hops: 4, Chain: []string{claimer.Peer, f1.Peer}}, claimer,
			with(func(s *answerState) { s.formers = []ring.Node{f1} }), action{step: stepHistory}},
		{"fetched before a restart", q, claimer, with(func(s *answerState) { s.history = historyFetched }),
			action{step: stepReply, reply: Reply{Taken: true}, markMine: true}},
		{"settle before granting", q, claimer, with(func(s *answerState) { s.history = historyNotFetched }),
			action{step: stepSettle}},
		{"taken while the chain was asked", q, claimer, with(func(s *answerState) {
			s.history, s.settled, s.held.mine = historyNotFetched, true, true
		}), action{step: stepReply, reply: Reply{Taken: true}}},
		{"granted", q, claimer, with(func(s *answerState) { s.history, s.settled = historyNotFetched, true }),
			action{step: stepReply, grant: true}},
		{"granted with where the cut chain goes on", cut, claimer, with(func(s *answerState) {
			s.formers, s.history, s.settled = []ring.Node{f1, f2}, historyNotFetched, true
		}), action{step: stepReply, grant: true, reply: Reply{Next: &f1, Chain: ch}}},
		{"granted with where a former owner's cut goes on", q, claimer, with(func(s *answerState) {
			s.formers, s.history, s.settled = []ring.Node{f1}, historyNotFetched, true
			s.replies = []chainReply{{rep: Reply{Next: &next, Chain: []string{"x"}}}}
		}), action{step: stepReply, grant: true, reply: Reply{Next: &next, Chain: []string{"x"}}}},
		{"refused along the chain grants nothing", q, claimer, with(func(s *answerState) {
			s.formers, s.history, s.settled = []ring.Node{f1, f2}, historyNotFetched, true
			s.replies = []chainReply{{err: refused}, {}}
		}), action{step: stepReply, reply: Reply{Retry: true}}},
		{"a former owner's retry grants nothing", q, claimer, with(func(s *answerState) {
			s.formers, s.history, s.settled = []ring.Node{f1}, historyNotFetched, true
			s.replies = []chainReply{{rep: Reply{Retry: true}}}
		}), action{step: stepReply, reply: Reply{Retry: true}}},
		{"back at a node of the chain grants nothing", loop, other, with(func(s *answerState) { s.history, s.settled = historyNotFetched, true }),
			action{step: stepReply}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.q, tt.from, tt.st)
			got.why = ""
			if !sameReply(got.reply, tt.want.reply) {
				t.Fatalf("decide reply = %+v\nwant           %+v", got.reply, tt.want.reply)
			}
			got.reply, tt.want.reply = Reply{}, Reply{}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("decide = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func sameReply(a, b Reply) bool {
	if (a.Next == nil) != (b.Next == nil) || (a.Next != nil && *a.Next != *b.Next) {
		return false
	}
	return a.Taken == b.Taken && a.Elsewhere == b.Elsewhere && a.Retry == b.Retry &&
		fmt.Sprint(a.Chain) == fmt.Sprint(b.Chain)
}

// TestRoute picks the virtual server a claim was taken from, or finds the
// claimer's view behind.
func TestRoute(t *testing.T) {
	at := func(b byte) ring.Node { var k id.ID; k[0] = b; return ring.Node{ID: k} }
	key := at(0x40).ID
	v45, v50, v90, vc0 := at(0x45), at(0x50), at(0x90), at(0xc0)
	tests := []struct {
		name      string
		q         Request
		vnodes    []ring.Node
		ours      ring.Node
		elsewhere bool
	}{
		{"first after the key", Request{Vnode: v45}, []ring.Node{vc0, v90}, v90, false},
		{"the named one", Request{Vnode: v45, To: vc0.ID}, []ring.Node{v90, vc0}, vc0, false},
		{"ours between the key and the claimer", Request{Vnode: v90}, []ring.Node{v50, vc0}, ring.Node{}, true},
		{"ours at the key", Request{Vnode: v90}, []ring.Node{{ID: key}}, ring.Node{}, true},
		{"along a chain only what we fetched", Request{Vnode: v90, Hops: 1}, []ring.Node{vc0, v50}, v50, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, elsewhere := route(tt.q, key, tt.vnodes)
			if ours.ID != tt.ours.ID || elsewhere != tt.elsewhere {
				t.Fatalf("route = %s, %v; want %s, %v", ours.ID.Short(), elsewhere, tt.ours.ID.Short(), tt.elsewhere)
			}
		})
	}
}

// TestCheckClaim refuses claims their sender had no right to make.
func TestCheckClaim(t *testing.T) {
	v, w := vnode(1), vnode(2)
	bad := v
	bad.Index = 1000
	long := make([]string, maxRounds*5+1)
	tests := []struct {
		name string
		from ring.Node
		q    Request
		ok   bool
	}{
		{"own virtual server", v, Request{Vnode: v}, true},
		{"another's", w, Request{Vnode: v}, false},
		{"an invalid index", bad, Request{Vnode: bad}, false},
		{"a chain too long", v, Request{Vnode: v, Chain: long}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkClaim(tt.from, tt.q, ring.DefaultMaxVirtualServers, 4)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrRole)) {
				t.Fatalf("checkClaim = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
