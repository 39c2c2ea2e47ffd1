package sortedread

import (
	"bytes"
	"slices"

	"github.com/syndtr/goleveldb/leveldb/iterator"
)

// Steps is how many entries Read steps over to reach the next key before
// it seeks instead.
const Steps = 8

// Read calls found(i, value) for each of keys (in any order, repeats
// allowed) that it holds, in key order. The iterator it reads must be
// fresh (unpositioned) and range over every key asked for; Read does not
// release it. value is valid only during the call. Read returns the first
// error found returns, else the iterator's.
func Read(it iterator.Iterator, keys [][]byte, found func(i int, value []byte) error) error {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	for _, i := range order {
		k := keys[i]
		// The iterator stands at the first entry at or after the last
		// key (or is unpositioned): every entry before it is before k
		// too.
		for n := 0; n < Steps && it.Valid() && bytes.Compare(it.Key(), k) < 0; n++ {
			it.Next()
		}
		if !it.Valid() || bytes.Compare(it.Key(), k) < 0 {
			it.Seek(k)
		}
		if it.Valid() && bytes.Equal(it.Key(), k) {
			if err := found(i, it.Value()); err != nil {
				return err
			}
		}
	}
	return it.Error()
}
