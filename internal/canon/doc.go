// Package canon puts URLs into the canonical form whose SHA-1 decides which
// ring node owns them.
//
// # Canonical form
//
// A URL is parsed as the WHATWG URL Standard's basic URL parser parses it
// (https://url.spec.whatwg.org/#concept-basic-url-parser) — what browsers
// do with a link — and serialized without its fragment. Only http and
// https URLs are accepted. In detail:
//
//   - Leading and trailing C0 controls and spaces are removed, and so is
//     every tab, CR and LF. A backslash is a slash. The scheme is lower
//     case; any number of slashes may follow "http:" ("http:///x" is
//     http://x/); a reference with the base's scheme and no "//" is
//     relative ("http:x").
//   - User information is dropped, and so is the fragment.
//   - The host is percent-decoded, then made ASCII by IDNA as the standard's
//     "domain to ASCII" does (UTS #46 non-transitional processing, no STD3
//     rules, no hyphen checks: "bücher.de" is xn--bcher-kva.de, "faß.de"
//     is xn--fa-hia.de, "a_b.example" is kept) and lower-cased. A host
//     whose last label is a number is an IPv4 address, its parts decimal,
//     octal or hexadecimal, written in dotted decimal (http://0x7f.1/ is
//     http://127.0.0.1/). An IPv6 address is written in brackets, in lower
//     case, with the first longest run of two or more zero pieces as "::".
//     Hosts holding a space, '%' after decoding, or another forbidden code
//     point are refused.
//   - The port is written in decimal without leading zeros; an empty port
//     and the scheme's default (80 for http, 443 for https) are dropped.
//   - The path always starts with "/". Its segments are kept as written —
//     empty ones too: "//" is not "/" — except that dot segments are
//     resolved, "." and ".." also when spelt with %2e.
//   - The query is kept, an empty one too: "/?" is not "/" (RFC 3986
//     section 6.2.3). Its parameters are not reordered.
//
// Then, beyond the standard, paths and queries are put into RFC 3986
// normal form (section 6.2.2), so that the spellings of a URL that RFC
// 3986 calls equivalent have one key:
//
//   - A percent escape of an unreserved character (letters, digits, '-',
//     '.', '_', '~') is decoded: "%7Euser" is "~user". Every other escape
//     is kept — "/a%2Fb" is not "/a/b" — with upper-case hexadecimal
//     digits.
//   - Bytes not allowed in a URI are percent-encoded: controls, space,
//     '"', '<', '>', '\' (in a query), '^', '`', '{', '|', '}', DEL and
//     every non-ASCII byte, as are a '%' that starts no escape ("%25") and,
//     in a query, the apostrophe, as the standard does. Everything else is
//     kept as written.
//
// Where the canonical form deliberately departs from the standard:
//
//   - The trailing dots of a domain are dropped ("example.com." is
//     example.com: the same DNS name), then the rest is parsed as a host
//     again; a host of dots is refused.
//   - Port 0, and hosts holding '`', '{' or '}' (which Go's net/url, and so
//     net/http, refuses) are refused: they cannot be fetched.
//   - Queries are percent-encoded as UTF-8, whatever the document's
//     encoding; bytes that are not UTF-8 are percent-encoded as they are.
//   - URLs longer than MaxLen bytes, given or canonical, are refused.
//
// Canonical is idempotent (Canonical(Canonical(u)) == Canonical(u)), and
// its result parses with net/url to a URL whose String() is the same. The
// tests check it against two independent WHATWG implementations:
// github.com/nlnwa/whatwg-url, and Node's URL class when node is
// installed (testdata/identity.json holds the cases that matter for
// identity; FuzzCanonical compares any input).
//
// SrcsetURLs finds the URLs of an srcset attribute for the crawler and the
// gateway alike.
//
// Everything here is pure and safe for concurrent use.
package canon
