// Package binread reads the binary values herod stores in its goleveldb
// databases (the archive's index and crawl states, the search store's
// postings, the link index's records): uvarints, varints, bytes and
// length-prefixed strings, one after another from the front of a value.
//
// A Reader remembers the first fault (a read past the value's end, a
// number out of its range, a string longer than its bound): every read
// after it returns a zero value, so a decoder reads all of its fields and
// checks Err once. Nothing it returns aliases memory the caller did not
// pass in.
package binread
