package export

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/cdx"
)

// TestMergeHides checks that records the query's Hide names (the access
// rules of the exporting gateway) never reach the merged stream, whether
// a whole URL or one capture of it, and that the others all do.
func TestMergeHides(t *testing.T) {
	a := storeNode(t, "http://h.example/1", "http://h.example/2")
	b := storeNode(t, "http://h.example/2", "http://h.example/3")
	hidden := 0
	hide := func(u string, tm time.Time) bool {
		h := u == "http://h.example/2" || (u == "http://h.example/1" && tm.Before(q0.Add(12*time.Hour)))
		if h {
			hidden++
		}
		return h
	}
	var ms []*Member
	for _, n := range []*testNode{a, b} {
		m := &Member{name: "test", r: bufio.NewReader(bytes.NewReader(reply(t, n, "h.example", ""))), q: cdx.Query{URL: "h.example", Match: cdx.MatchHost, Hide: hideFunc(hide)}}
		if err := m.next(); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var out strings.Builder
	var cursors []string
	if err := Merge(ms, &out, func(c string) { cursors = append(cursors, c) }); err != nil {
		t.Fatal(err)
	}
	// Left: /1 day 1 and /3 days 0 and 1.
	if len(cursors) != 3 || hidden != 5 {
		t.Fatalf("cursors %q, %d hidden; want 3 and 5", cursors, hidden)
	}
	for _, c := range cursors {
		if strings.Contains(c, "h.example/2") {
			t.Errorf("hidden URL exported: %s", c)
		}
	}
}

// hideFunc is a cdx.Hider of a function.
type hideFunc func(url string, t time.Time) bool

func (f hideFunc) Hidden(url string, t time.Time) bool { return f(url, t) }
