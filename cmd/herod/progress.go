package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows a long command's progress on one terminal line,
// redrawn at most every progressEvery: records and bytes written so far,
// the elapsed time and where the command is. Off a terminal (a pipe, a
// log file) it shows nothing, so that the output stays clean.
type progress struct {
	w    io.Writer
	what string
	now  func() time.Time

	mu      sync.Mutex
	on      bool
	start   time.Time
	drawn   time.Time
	records int64
	bytes   int64
	at      string
	shown   bool // a line is on screen
}

// progressEvery is the shortest time between two redraws.
const progressEvery = 200 * time.Millisecond

// newProgress returns the progress of command what on w (stderr), shown
// only when w is a terminal.
func newProgress(w io.Writer, what string) *progress {
	return &progress{w: w, what: what, now: time.Now, on: isTerminal(w), start: time.Now()}
}

// add counts records and bytes done, at is where the command is now (a
// URL, a file); the line is redrawn if it is due.
func (p *progress) add(records, bytes int64, at string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records += records
	p.bytes += bytes
	if at != "" {
		p.at = at
	}
	p.draw(false)
}

// draw writes the line if due (or if force). Called with mu held.
func (p *progress) draw(force bool) {
	if !p.on {
		return
	}
	now := p.now()
	if !force && now.Sub(p.drawn) < progressEvery {
		return
	}
	p.drawn = now
	line := fmt.Sprintf("%s: %d records, %s, %s", p.what, p.records, humanBytes(p.bytes), now.Sub(p.start).Round(time.Second))
	if p.records == 0 && p.bytes == 0 {
		line = fmt.Sprintf("%s: working, %s", p.what, now.Sub(p.start).Round(time.Second))
	}
	if p.at != "" {
		line += " — " + p.at
	}
	if len(line) > 110 {
		line = line[:107] + "…"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line) // start of line, erase it
	p.shown = true
}

// tick redraws the line every second until ctx ends, for commands that
// cannot count their work (the elapsed time still moves).
func (p *progress) tick(ctx context.Context) {
	if !p.on {
		return
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.mu.Lock()
				p.draw(true)
				p.mu.Unlock()
			}
		}
	}()
}

// done clears the progress line, so that the command's report follows on
// a clean line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
	p.on = false
}

// countingWriter counts the bytes written through it into a progress.
type countingWriter struct {
	w io.Writer
	p *progress
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.add(0, int64(n), "")
	return n, err
}

// humanBytes writes n in B, kB, MB or GB.
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
