package links

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/herod-archive/herod/internal/wire"
)

// A source's state (sourceState) is read and written once for each
// source a sweep reads. It was JSON (a map of targets to anchors and
// times): decoding and encoding it were a quarter of a sweep's CPU for
// a page of ten links. It is now a binary form:
//
//	stateBinary(1) last(8) count(uvarint)
//	count × { shared(uvarint) suffix(uvarint) target-suffix anchor(uvarint len, bytes) last-from(varint ns) }
//
// targets sorted and front-coded (a page's links share their host).
// A value starting with '{' is the JSON form of older indexes, still
// read; the next save writes the binary form.

const stateBinary = 1

var errState = errors.New("links state: bad value")

// encodeState returns the binary form of st.
func encodeState(st *sourceState) []byte {
	targets := slices.Sorted(mapKeys(st.Open))
	n := 1 + 8 + binary.MaxVarintLen64
	for _, t := range targets {
		n += len(t) + len(st.Open[t].Anchor) + 4*binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	b = append(b, stateBinary)
	b = binary.BigEndian.AppendUint64(b, uint64(st.Last.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(targets)))
	prev := ""
	for _, t := range targets {
		o := st.Open[t]
		shared := wire.CommonPrefix(prev, t)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(t)-shared))
		b = append(b, t[shared:]...)
		b = binary.AppendUvarint(b, uint64(len(o.Anchor)))
		b = append(b, o.Anchor...)
		b = binary.AppendVarint(b, st.Last.UnixNano()-o.From.UnixNano())
		prev = t
	}
	return b
}

// decodeState decodes a state of either form.
func decodeState(v []byte) (sourceState, error) {
	var st sourceState
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &st)
		return st, err
	}
	if len(v) < 9 || v[0] != stateBinary {
		return st, errState
	}
	last := int64(binary.BigEndian.Uint64(v[1:9]))
	st.Last = time.Unix(0, last).UTC()
	r := v[9:]
	uv := func() (uint64, bool) {
		x, w := binary.Uvarint(r)
		if w <= 0 {
			return 0, false
		}
		r = r[w:]
		return x, true
	}
	count, ok := uv()
	if !ok || count > uint64(len(r)) { // every link takes a byte at least
		return sourceState{}, errState
	}
	if count > 0 {
		st.Open = make(map[string]openLink, count)
	}
	var prev []byte
	for range count {
		shared, ok1 := uv()
		suffix, ok2 := uv()
		if !ok1 || !ok2 || shared > uint64(len(prev)) || suffix > uint64(len(r)) {
			return sourceState{}, errState
		}
		t := append(prev[:shared:shared], r[:suffix]...)
		r = r[suffix:]
		alen, ok := uv()
		if !ok || alen > uint64(len(r)) {
			return sourceState{}, errState
		}
		anchor := string(r[:alen])
		r = r[alen:]
		d, w := binary.Varint(r)
		if w <= 0 {
			return sourceState{}, errState
		}
		r = r[w:]
		key := string(t)
		if len(prev) > 0 && key <= string(prev) {
			return sourceState{}, errState // targets are sorted, each once
		}
		st.Open[key] = openLink{Anchor: anchor, From: time.Unix(0, last-d).UTC()}
		prev = t
	}
	if len(r) != 0 {
		return sourceState{}, errState
	}
	return st, nil
}
