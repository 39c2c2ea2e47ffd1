// Package browsertest runs a headless Chromium (or Chrome) for tests that
// must see what a reader's browser sees: Load opens a page, runs its
// scripts for a bounded virtual time and returns the resulting DOM and the
// console messages, CSP refusals included.
//
// Find skips the calling test where no working browser is installed, or
// fails it when HEROD_REQUIRE_BROWSER is set. It is for tests only.
package browsertest
