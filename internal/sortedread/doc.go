// Package sortedread reads many keys of a goleveldb database through one
// iterator instead of a point read each.
//
// A point read searches every table that may hold its key: at a million
// URLs most of those reads miss the block cache, and each decodes a block
// of its own. Keys that a caller reads together are often neighbours in
// the database (one host's URLs, in URL order), so Read visits them in key
// order and steps the iterator from one to the next while it lies a few
// entries on, seeking only across gaps: consecutive keys cost one block
// read between them, not one each.
package sortedread
