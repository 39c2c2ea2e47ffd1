package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgress drives a progress line with a fake clock: it is redrawn at
// most every progressEvery, counts records and bytes, and is erased by
// done; off a terminal it writes nothing.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := &progress{w: &buf, what: "export", now: func() time.Time { return now }, on: true, start: now}
	p.drawn = now // the first draw is due progressEvery from the start
	for i := range 10 {
		now = now.Add(50 * time.Millisecond)
		p.add(1, 1500, "http://a.example/"+string(rune('a'+i)))
	}
	// 500 ms in 50 ms steps: drawn at 200 and 400 ms.
	if n := strings.Count(buf.String(), "\r\x1b[K"); n != 2 {
		t.Errorf("%d redraws, want 2: %q", n, buf.String())
	}
	last := buf.String()[strings.LastIndex(buf.String(), "\r\x1b[K"):]
	if !strings.Contains(last, "export: 8 records, 12.0 kB, 0s — http://a.example/h") {
		t.Errorf("last line %q", last)
	}
	p.done()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Errorf("done did not erase the line: %q", buf.String())
	}
	n := buf.Len()
	now = now.Add(time.Second)
	p.add(1, 1, "")
	if buf.Len() != n {
		t.Error("drawn after done")
	}

	var pipe bytes.Buffer
	q := newProgress(&pipe, "fsck") // not a terminal
	q.add(5, 5, "x")
	q.done()
	if pipe.Len() != 0 {
		t.Errorf("progress off a terminal wrote %q", pipe.String())
	}
}
