package forward

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestOutboxSurvivesRestart: links forwarded but not acknowledged when the
// process dies are walked again after a restart.
func TestOutboxSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outbox")
	ob, err := OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	links := testLinks(50)
	if err := ob.add(links); err != nil {
		t.Fatal(err)
	}
	if err := ob.remove(links[:20]); err != nil {
		t.Fatal(err)
	}
	ob.Close()

	ob, err = OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	f, err := New(Config{Ring: newFakeRing(1, 1), Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Pending != 30 {
		t.Fatalf("resumed %d pending links, want 30", st.Pending)
	}
	got, err := ob.load()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range links[20:] {
		want = append(want, l.url)
	}
	var have []string
	for _, l := range got {
		have = append(have, l.url)
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Fatal("outbox lost or invented links")
	}
}
