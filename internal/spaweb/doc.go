// Package spaweb serves a small single-page application built to test
// browser capture (issue 41): what it shows is mostly built by scripts,
// so a fetch of its HTML finds little of it. It has
//
//   - client-side routes: every /app/<name> path answers the same shell,
//     and the script renders the route, pushing /app/home with
//     history.pushState when opened at /;
//   - content loaded with fetch (the route's JSON, the navigation's JSON);
//   - links written by scripts, among them pages no HTML names (the
//     /app/hidden-<n> routes: found only by running the scripts);
//   - lazy images: loading=lazy images far below the fold, and images
//     whose src an IntersectionObserver sets when they scroll into view;
//   - an infinite-scroll list fetched a page at a time as its end
//     scrolls into view, ending after Config.ScrollPages pages;
//   - a web font loaded by script (new FontFace, document.fonts.add).
//
// It also serves hostile pages for the capture's safety tests under
// /hostile/ (see Site.HostileURL).
//
// The site answers on one loopback listener and counts the requests it
// gets per path, so that a test can compare what a real browser visit
// loaded with what a capture recorded. Concurrency: a Site is safe for
// concurrent use once started.
package spaweb
