// Package access decides what a node shows of the captures it keeps:
// access rules as data, after pywb's access controls (SURT-keyed rules,
// allow / block / exclude, before/after capture dates, an embargo).
//
// A Rule names a SURT prefix (every URL whose SURT key starts with it) or
// one exact URL, an Action, optional capture-date bounds (After
// inclusive, Before exclusive), an optional embargo (the rule applies
// only to captures newer than that period), a reason and the date it was
// decided. Actions:
//
//   - allow: shown, listed, exported;
//   - block: kept and listed (calendar, TimeMap, CDX), never replayed nor
//     exported; a reader gets a page saying why and since when, with the
//     rule's status (451 by default, or 403);
//   - exclude: kept, never shown, listed nor exported (a reader gets 404,
//     as for a URL never archived);
//   - purge: as exclude wherever a capture leaves the node.
//
// Precedence (Set.Decide), for one URL and one capture time:
//
//  1. only the rules whose key matches the URL (an exact rule: the same
//     SURT key; a prefix rule: a string prefix of the key, as in pywb,
//     so "com,example)/a" matches "com,example)/ab" too) and whose date
//     window holds the capture time apply;
//  2. an exact-URL rule beats any prefix rule, a longer prefix a shorter;
//  3. on the same key, a rule with a date window (before, after, embargo)
//     beats one without;
//  4. still tied, the more restrictive action wins: purge, exclude,
//     block, allow;
//  5. no rule applies: allow.
//
// So "allow inside block" is a longer allow prefix under a block, and an
// embargo on a prefix is a block rule with Embargo set. Unlike pywb, an
// embargo is a rule like any other: a more specific allow overrides it.
//
// SURT keys (SURT) are the CDX API's surtkey column (archive.Surt): the
// scheme and a leading "www." dropped, host labels reversed, a
// non-default port kept, query arguments sorted, lower case:
// http://www.Example.com:8080/A?b=1&a=2 is "com,example:8080)/a?a=2&b=1".
//
// Lookup is a binary search of the sorted prefix keys, stepping back to
// shorter prefixes only (a handful of steps), plus one map lookup for
// exact rules: its cost does not grow with the number of rules
// (BenchmarkDecide).
//
// Concurrency: a Set is immutable and safe for concurrent use; a Table
// (the node's current rules, from several sources) swaps Sets atomically
// and is safe for concurrent use; a File is safe for concurrent use.
package access
