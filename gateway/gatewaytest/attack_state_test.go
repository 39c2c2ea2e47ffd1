package gatewaytest

import (
	"testing"
	"time"
)

// TestAttackPagesLeaveNoState checks in headless Chromium that a replayed
// page finds no state another replay stored, though every archived site
// shares the content origin: the hostile site's poison.html stores
// values through its own localStorage, sessionStorage and document.cookie
// and through a fresh realm's (the origin's real ones); victim.html,
// replayed next in the same tab, must find none of them, and still read
// back what it stores itself.
func TestAttackPagesLeaveNoState(t *testing.T) {
	h := newHostileTab(t)
	h.open(t, "poison.html")
	h.report(t, "poisoned", 20*time.Second)
	h.open(t, "victim.html")
	// localStorage and sessionStorage lengths, the poisoned items and the
	// cookies: nothing.
	if got := h.report(t, "victim-found", 20*time.Second); got != "0|0||||" {
		t.Errorf("the next replay found stored state: %q", got)
	}
	// What it stores itself reads back (an expired cookie is gone).
	if got, want := h.report(t, "victim-own", 20*time.Second), "1|2|2|mine,other|mine=1"; got != want {
		t.Errorf("the page's own storage: %q, want %q", got, want)
	}
}
