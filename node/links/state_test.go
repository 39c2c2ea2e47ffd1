package links

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func stateSample() sourceState {
	last := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	return sourceState{Last: last, Open: map[string]openLink{
		"http://a.test/":          {Anchor: "home", From: last.Add(-48 * time.Hour)},
		"http://a.test/docs/":     {From: last},
		"http://a.test/docs/x":    {Anchor: "x — ünïcode", From: last.Add(-time.Second)},
		"https://b.example/page":  {Anchor: "b", From: last.Add(-365 * 24 * time.Hour)},
		"https://b.example/page2": {Anchor: "later", From: last.Add(time.Nanosecond)}, // not before Last: kept as is
	}}
}

// TestStateForms: a state round-trips through its binary form, and the
// JSON form of older indexes decodes to the same state.
func TestStateForms(t *testing.T) {
	for _, st := range []sourceState{stateSample(), {Last: time.Unix(1700000000, 0).UTC()}} {
		got, err := decodeState(encodeState(&st))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("binary round trip: %+v, want %+v", got, st)
		}
		old, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, err = decodeState(old)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Last.Equal(st.Last) || len(got.Open) != len(st.Open) {
			t.Errorf("JSON form: %+v, want %+v", got, st)
		}
		for k, o := range st.Open {
			if g := got.Open[k]; g.Anchor != o.Anchor || !g.From.Equal(o.From) {
				t.Errorf("JSON form, %s: %+v, want %+v", k, g, o)
			}
		}
	}
	for _, bad := range [][]byte{nil, {stateBinary}, {9, 0, 0, 0, 0, 0, 0, 0, 0, 0}, append(encodeState(&sourceState{Last: time.Unix(5, 0)}), 0)} {
		if _, err := decodeState(bad); err == nil {
			t.Errorf("decodeState(%x): no error", bad)
		}
	}
}

// FuzzDecodeState: any value decodes to an error or to a state whose
// binary form decodes to the same state.
func FuzzDecodeState(f *testing.F) {
	st := stateSample()
	f.Add(encodeState(&st))
	old, _ := json.Marshal(st)
	f.Add(old)
	f.Add([]byte{stateBinary, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 'a', 0, 0, 1, 1, 'b', 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		st, err := decodeState(v)
		if err != nil || (len(v) > 0 && v[0] == '{') {
			return
		}
		again, err := decodeState(encodeState(&st))
		if err != nil {
			t.Fatalf("re-encoded state: %v", err)
		}
		if !reflect.DeepEqual(again, st) {
			t.Fatalf("re-encoded state %+v, want %+v", again, st)
		}
	})
}

// BenchmarkState: decoding and encoding the state of a source of ten
// links (a sweep does both for every source it reads), binary against
// the JSON form of older indexes. Metric: µs a decode and an encode,
// and bytes stored.
//
//	go test ./node/links -run '^$' -bench BenchmarkState
func BenchmarkState(b *testing.B) {
	last := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	st := sourceState{Last: last, Open: map[string]openLink{}}
	for i := range 10 {
		st.Open[fmt.Sprintf("http://host%d.example.org/section/page-%d.html", i%3, i*37)] = openLink{Anchor: fmt.Sprintf("link text %d", i), From: last.Add(-time.Duration(i) * time.Hour)}
	}
	for _, c := range []struct {
		name string
		enc  func(*sourceState) []byte
	}{
		{"binary", encodeState},
		{"json", func(s *sourceState) []byte { v, _ := json.Marshal(s); return v }},
	} {
		b.Run(c.name, func(b *testing.B) {
			v := c.enc(&st)
			for b.Loop() {
				s, err := decodeState(v)
				if err != nil {
					b.Fatal(err)
				}
				v = c.enc(&s)
			}
			b.ReportMetric(float64(len(v)), "bytes")
		})
	}
}
