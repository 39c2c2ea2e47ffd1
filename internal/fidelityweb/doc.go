// Package fidelityweb serves a small web site built to measure replay
// fidelity (issue 19): its pages do what real sites do that an archive
// finds hard to replay. Every page has
//
//   - a stylesheet with a cache-busting query whose @import chain
//     (theme.css, fonts.css) ends in a web font and a background image,
//     each with a query of its own;
//   - images with cache-busters, an srcset, lazy-loaded images (one in
//     view, one far below it) and an image behind a 301 redirect;
//   - an ES module entry point with a query that imports modules by
//     absolute, root-relative and relative URLs, imports one more with
//     import(), fetches the page's JSON (announced by <link rel=preload>)
//     with a timestamp cache-buster, and builds part of the page from it;
//     the imported module adds an image by a URL relative to its own
//     (new URL(…, import.meta.url)) and starts a worker;
//   - links to a plain-text file and a PDF, and to the next page by a URL
//     that redirects.
//
// The site answers on one loopback listener and counts the requests it
// gets, so that a benchmark can tell whether a replay reached it.
// Concurrency: a Site is safe for concurrent use once started.
package fidelityweb
