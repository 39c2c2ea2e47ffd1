package crawl

import (
	"fmt"
	"slices"
	"testing"
)

// TestSched runs the host scheduler's transitions as tables: each case is
// a sequence of steps with the hosts each must start and the state after,
// with no loops, sockets or clock.
func TestSched(t *testing.T) {
	type step struct {
		op    string // wake, done, yield, or closed-done / closed-yield
		host  string
		start []string // hosts whose loop must start
	}
	type want struct {
		running int
		waiting []string
	}
	tests := []struct {
		name  string
		max   int
		steps []step
		want  want
	}{
		{"runs while loops are free", 2, []step{
			{"wake", "a", []string{"a"}}, {"wake", "b", []string{"b"}}, {"wake", "c", nil},
		}, want{2, []string{"c"}}},
		{"a woken host is not started twice", 2, []step{
			{"wake", "a", []string{"a"}}, {"wake", "a", nil},
		}, want{1, nil}},
		{"done hands the loop to the head of the line", 1, []step{
			{"wake", "a", []string{"a"}}, {"wake", "b", nil}, {"wake", "c", nil}, {"done", "a", []string{"b"}},
		}, want{1, []string{"c"}}},
		{"yield goes to the back of the line", 1, []step{
			{"wake", "a", []string{"a"}}, {"wake", "b", nil}, {"yield", "a", []string{"b"}},
		}, want{1, []string{"a"}}},
		{"turns go round", 1, []step{
			{"wake", "a", []string{"a"}}, {"wake", "b", nil}, {"yield", "a", []string{"b"}},
			{"yield", "b", []string{"a"}}, {"done", "a", []string{"b"}}, {"done", "b", nil},
		}, want{0, nil}},
		{"yield with nobody waiting runs the host again", 1, []step{
			{"wake", "a", []string{"a"}}, {"yield", "a", []string{"a"}},
		}, want{1, nil}},
		{"closing starts nobody", 1, []step{
			{"wake", "a", []string{"a"}}, {"wake", "b", nil}, {"closed-done", "a", nil},
		}, want{0, []string{"b"}}},
		{"closing keeps a yielding host in line", 1, []step{
			{"wake", "a", []string{"a"}}, {"closed-yield", "a", nil},
		}, want{0, []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSched(tt.max)
			for i, st := range tt.steps {
				var started []string
				switch st.op {
				case "wake":
					if _, start := s.wake(st.host); start {
						started = []string{st.host}
					}
				case "done", "closed-done":
					started = s.done(st.host, st.op == "done")
				case "yield", "closed-yield":
					started = s.yield(st.host, s.hosts[st.host], st.op == "yield")
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
				if !slices.Equal(started, st.start) {
					t.Fatalf("step %d (%s %s): started %v, want %v", i, st.op, st.host, started, st.start)
				}
			}
			if s.running != tt.want.running || !slices.Equal(s.waiting, tt.want.waiting) {
				t.Fatalf("running %d, waiting %v; want %d, %v", s.running, s.waiting, tt.want.running, tt.want.waiting)
			}
			if s.othersWaiting() != (len(tt.want.waiting) > 0) {
				t.Fatalf("othersWaiting = %v with %v waiting", s.othersWaiting(), s.waiting)
			}
			n := 0
			for _, h := range s.hosts {
				if h.running {
					n++
				}
			}
			if n != s.running {
				t.Fatalf("%d hosts marked running, count %d", n, s.running)
			}
		})
	}
}

// TestSchedWakeSignals bumps a scheduled host's generation and signals
// its loop, without blocking when a signal is pending already.
func TestSchedWakeSignals(t *testing.T) {
	s := newSched(1)
	h, _ := s.wake("a")
	for range 2 {
		if _, start := s.wake("a"); start {
			t.Fatal("a scheduled host started again")
		}
	}
	if h.gen != 2 || len(h.wake) != 1 {
		t.Fatalf("gen %d, signals pending %d; want 2, 1", h.gen, len(h.wake))
	}
}

// TestIdleStep decides what a host loop does when its read found nothing.
func TestIdleStep(t *testing.T) {
	tests := []struct {
		added     bool
		inflight  int
		fromStart bool
		want      idle
	}{
		{true, 0, true, idleReread},
		{true, 3, false, idleReread},
		{false, 0, false, idleRewind},
		{false, 0, true, idleLeave},
		{false, 2, false, idleWait},
		{false, 2, true, idleWait},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("added=%v,inflight=%d,fromStart=%v", tt.added, tt.inflight, tt.fromStart), func(t *testing.T) {
			if got := idleStep(tt.added, tt.inflight, tt.fromStart); got != tt.want {
				t.Fatalf("idleStep = %d, want %d", got, tt.want)
			}
		})
	}
}
