// Package webrefs owns where URLs live in web documents, for every part of
// herod that reads or rewrites them: the crawler extracts links and page
// requisites with it, the gateway rewrites archived pages with it, the
// exchange formats list a page's links with it, and the gateway serves its
// attribute table to replay.js, so that what the crawler archives and what
// replay rewrites cannot drift apart.
//
// It holds:
//
//   - the attribute table (Table, Lookup): which attribute of which HTML
//     element holds a URL, of what kind (one URL, a frame's document, a
//     srcset list, CSS, a meta refresh), and whether the page loads it
//     (a requisite), the reader follows it (a link) or neither;
//   - one HTML tokenizer pass that keeps byte offsets (Walker, ScanAttrs)
//     and the references it finds (HTML);
//   - one CSS scanner (CSS): url(), @import and image-set() strings;
//   - one JavaScript scanner on a real lexer (ScanJS, JS): static imports
//     and re-exports, import(), new URL(…, import.meta.url), workers, and
//     string literals naming a resource of the script's own host.
//
// Every scanner reports positions into its input, so that a rewriter can
// replace exactly the URL and keep every other byte, and never panics,
// whatever the input (the fuzz targets of this package hold it to that).
// The package has no state: its functions are safe for concurrent use.
package webrefs
