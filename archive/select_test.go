package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// selectStore holds hosts related by domain (a.example, www.a.example,
// sub.a.example), others (b.example, c.example:8080, xa.example), pages
// of three media types and three statuses, each captured on three days,
// changing on each.
func selectStore(t *testing.T) *Store {
	s := openTest(t, Options{NoSync: true})
	for _, host := range []string{"a.example", "www.a.example", "sub.a.example", "b.example", "c.example:8080", "xa.example"} {
		for p := 0; p < 8; p++ {
			u := fmt.Sprintf("http://%s/d%d/p%d", host, p%3, p)
			for d := 0; d < 3; d++ {
				c := capture(u, t0.Add(time.Duration(d)*day+time.Duration(p)*time.Minute), fmt.Sprintf("%s %d %d", host, p, d))
				switch p % 4 {
				case 1:
					c.Header.Set("Content-Type", "image/png")
				case 2:
					c.Header.Set("Content-Type", "text/css")
				}
				if p == 5 {
					c.Status = 404
				}
				if p == 6 && d == 2 {
					c.Status = 500 // its newest is an error: latest with status=200 takes the one before
				}
				mustPut(t, s, c)
			}
		}
	}
	return s
}

// recordName names a version as the export's records and the scan's
// versions both can: URL, time and payload digest.
func recordName(u string, at time.Time, digest string) string {
	return u + " " + at.UTC().Format(time.RFC3339Nano) + " " + digest
}

// exportKeys exports o and returns the records' keys, in stream order.
func exportKeys(t *testing.T, s *Store, o ExportOptions) []string {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.Export(context.Background(), o, &b, nil); err != nil {
		t.Fatalf("export %+v: %v", o.Query, err)
	}
	var out []string
	for _, r := range readWARC(t, b.Bytes()) {
		at, err := time.Parse(time.RFC3339Nano, r.Header.Get("Warc-Date"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recordName(r.Header.Get("Warc-Target-Uri"), at, r.Header.Get("Warc-Payload-Digest")))
	}
	return out
}

// scanKeys lists the versions a scan of q returns.
func scanKeys(t *testing.T, s *Store, q Query) []string {
	t.Helper()
	var out []string
	if err := s.Scan(context.Background(), q, func(v Version) error {
		out = append(out, recordName(v.URL, v.Time, warcDigest(v.Digest)))
		return nil
	}); err != nil {
		t.Fatalf("scan %+v: %v", q, err)
	}
	return out
}

// referenceKeys applies q by its definition (Query.Keeps, then Latest) to
// every version in the store.
func referenceKeys(t *testing.T, s *Store, q Query) []string {
	t.Helper()
	var all []Version
	if err := s.Scan(context.Background(), Query{}, func(v Version) error {
		all = append(all, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, v := range all {
		if !q.Keeps(v) {
			continue
		}
		if q.Latest && slices.ContainsFunc(all[i+1:], func(w Version) bool { return w.URL == v.URL && q.Keeps(w) }) {
			continue
		}
		out = append(out, recordName(v.URL, v.Time, warcDigest(v.Digest)))
	}
	return out
}

// TestSelectionExportEqualsScan: for each selection, the export holds
// exactly the versions the scan (the CDX listing's source) lists, in the
// same order, and both equal the selection's definition applied to every
// version of the store.
func TestSelectionExportEqualsScan(t *testing.T) {
	s := selectStore(t)
	for _, c := range []struct {
		name string
		q    Query
		min  int // the selection must keep at least this many, to mean something
	}{
		{"all", Query{All: true}, 144},
		{"host", Query{Host: "a.example"}, 24},
		{"domain", Query{Domain: "a.example"}, 72},
		{"domain-port", Query{Domain: "c.example:8080"}, 24},
		{"surt-host", Query{SURT: "example,a)/d1"}, 12},
		{"surt-subdomains", Query{SURT: "example,a,"}, 24},
		{"regex", Query{All: true, Filter: Filter{Regex: `http://[^/]*a\.example/d0/.*`}}, 24},
		{"type", Query{All: true, Filter: Filter{Type: "image/png"}}, 36},
		{"type-family", Query{Domain: "a.example", Filter: Filter{Type: "text/*"}}, 36},
		{"status", Query{All: true, Filter: Filter{Status: 404}}, 18},
		{"dates", Query{All: true, From: t0.Add(day), To: t0.Add(day + time.Hour)}, 48},
		{"latest", Query{All: true, Filter: Filter{Latest: true}}, 48},
		{"latest-200", Query{Host: "b.example", Filter: Filter{Latest: true, Status: 200}}, 7},
		{"latest-dated", Query{Prefix: "http://b.example/d0/", To: t0.Add(day + time.Hour), Filter: Filter{Latest: true}}, 3},
		{"sample", Query{All: true, Filter: Filter{Sample: 250000}}, 9},
		{"part", Query{All: true, Filter: Filter{Part: 2, Parts: 3}}, 9},
		{"combined", Query{Domain: "a.example", Filter: Filter{Type: "text/html", Status: 200, Latest: true, Sample: 800000}}, 2},
		{"url", Query{URL: "http://b.example/d1/p4", Filter: Filter{Regex: ".*p4"}}, 3},
		{"url-filtered-out", Query{URL: "http://b.example/d1/p4", Filter: Filter{Regex: ".*p5"}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := referenceKeys(t, s, c.q)
			if len(want) < c.min {
				t.Fatalf("the selection keeps %d versions, the test needs %d", len(want), c.min)
			}
			if c.min == 0 && len(want) != 0 {
				t.Fatalf("the selection keeps %d versions, want none", len(want))
			}
			if got := scanKeys(t, s, c.q); !slices.Equal(got, want) {
				t.Errorf("scan lists %d versions, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			if got := exportKeys(t, s, ExportOptions{Query: c.q}); !slices.Equal(got, want) {
				t.Errorf("export holds %d versions, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
		})
	}
}

// TestSelectionParts: a whole-archive export split in 4 parts is the
// whole set, disjoint, with every version of a URL in one part; so is a
// sample's.
func TestSelectionParts(t *testing.T) {
	s := selectStore(t)
	for _, base := range []Query{{All: true}, {All: true, Filter: Filter{Sample: 500000}}} {
		whole := exportKeys(t, s, ExportOptions{Query: base})
		seen := map[string]int{}
		partOfURL := map[string]int{}
		for i := 1; i <= 4; i++ {
			q := base
			q.Part, q.Parts = i, 4
			got := exportKeys(t, s, ExportOptions{Query: q})
			if len(got) == 0 || len(got) == len(whole) {
				t.Errorf("part %d of 4 holds %d of %d versions: not a split", i, len(got), len(whole))
			}
			for _, k := range got {
				seen[k]++
				u, _, _ := strings.Cut(k, " ")
				if p, ok := partOfURL[u]; ok && p != i {
					t.Errorf("%s in parts %d and %d", u, p, i)
				}
				partOfURL[u] = i
			}
		}
		for _, k := range whole {
			if seen[k] != 1 {
				t.Errorf("%s in %d parts, want 1", k, seen[k])
			}
			delete(seen, k)
		}
		if len(seen) > 0 {
			t.Errorf("parts hold %d versions outside the whole", len(seen))
		}
	}
}

// TestSelectionResume: a filtered export cut after each record and
// resumed from that record's cursor misses and repeats nothing.
func TestSelectionResume(t *testing.T) {
	s := selectStore(t)
	for _, q := range []Query{
		{Domain: "a.example", Filter: Filter{Type: "text/html"}},
		{All: true, Filter: Filter{Latest: true, Part: 1, Parts: 2}},
	} {
		var cursors []string
		var b bytes.Buffer
		if _, err := s.Export(context.Background(), ExportOptions{Query: q, Progress: func(c string) { cursors = append(cursors, c) }}, &b, nil); err != nil {
			t.Fatal(err)
		}
		whole := exportKeys(t, s, ExportOptions{Query: q})
		if len(cursors) != len(whole) || len(whole) < 4 {
			t.Fatalf("%d cursors for %d records", len(cursors), len(whole))
		}
		for i, c := range cursors {
			rest := exportKeys(t, s, ExportOptions{Query: q, After: c})
			if got := append(slices.Clone(whole[:i+1]), rest...); !slices.Equal(got, whole) {
				t.Fatalf("cut after record %d and resumed: %d records, want %d", i, len(got), len(whole))
			}
		}
	}
}

// TestSelectionRefused: a malformed filter is refused with ErrSelection
// by the scan and the export, before anything is written.
func TestSelectionRefused(t *testing.T) {
	s := selectStore(t)
	for _, f := range []Filter{
		{Regex: "("},
		{Regex: strings.Repeat("a", MaxRegexLen+1)},
		{Type: "html"},
		{Type: "Text/HTML"},
		{Status: 42},
		{Sample: SampleAll + 1},
		{Sample: -1},
		{Part: 5, Parts: 4},
		{Part: 0, Parts: 4},
		{Part: 1},
		{Parts: MaxParts + 1, Part: 1},
	} {
		q := Query{All: true, Filter: f}
		if err := f.Check(); !errors.Is(err, ErrSelection) {
			t.Errorf("%+v: Check %v, want ErrSelection", f, err)
		}
		var b bytes.Buffer
		if _, err := s.Export(context.Background(), ExportOptions{Query: q}, &b, nil); !errors.Is(err, ErrSelection) || b.Len() != 0 {
			t.Errorf("%+v: export %v after %d bytes, want ErrSelection before any", f, err, b.Len())
		}
		if err := s.Scan(context.Background(), q, func(Version) error { return nil }); !errors.Is(err, ErrSelection) {
			t.Errorf("%+v: scan %v, want ErrSelection", f, err)
		}
	}
	var b bytes.Buffer
	if _, err := s.Export(context.Background(), ExportOptions{Query: Query{All: true, Filter: Filter{Latest: true}}, Revisits: true}, &b, nil); !errors.Is(err, ErrSelection) {
		t.Errorf("latest with revisits: %v, want ErrSelection", err)
	}
}

// TestPartsAndSample: parts are near equal and a sample near its share,
// on 20 000 URLs; a smaller sample is inside a larger one.
func TestPartsAndSample(t *testing.T) {
	const n = 20000
	counts := make([]int, 5)
	small, large, both := 0, 0, 0
	for i := range n {
		u := fmt.Sprintf("http://h%d.example/p%d", i%97, i)
		p := PartOf(u, 4)
		if p < 1 || p > 4 {
			t.Fatalf("part %d of 4", p)
		}
		counts[p]++
		a, b := InSample(u, 10000), InSample(u, 100000)
		if a {
			small++
		}
		if b {
			large++
		}
		if a && b {
			both++
		}
	}
	for p := 1; p <= 4; p++ {
		if counts[p] < n/4*9/10 || counts[p] > n/4*11/10 {
			t.Errorf("part %d holds %d of %d URLs", p, counts[p], n)
		}
	}
	if small < n/100/2 || small > n/100*2 || large < n/10*9/10 || large > n/10*11/10 || both != small {
		t.Errorf("samples of 1%% and 10%%: %d and %d of %d URLs, %d in both", small, large, n, both)
	}
}
