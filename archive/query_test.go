package archive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

func TestScan(t *testing.T) {
	s := exportStore(t)
	ctx := context.Background()
	cases := []struct {
		name string
		q    Query
		urls int
		vers int
	}{
		{"all", Query{}, 12, 24},
		{"host", Query{Host: "www.b.example"}, 4, 8},
		{"unknown host", Query{Host: "b.example"}, 0, 0},
		{"prefix", Query{Prefix: "http://a.example/dir1/"}, 2, 4},
		{"prefix of host", Query{Prefix: "http://c.example:8080/"}, 4, 8},
		{"from", Query{From: t0.Add(day)}, 12, 12},
		{"to", Query{To: t0.Add(time.Minute)}, 12, 6},
		{"exact", Query{URL: "http://a.example/dir0/page?b=2&a=0"}, 1, 2},
		{"exact unknown", Query{URL: "http://a.example/dir0/page"}, 0, 0},
		{"exact other host", Query{URL: "http://a.example/dir0/page?b=2&a=0", Host: "c.example:8080"}, 0, 0},
		{"window", Query{Host: "a.example", From: t0.Add(2 * day), To: t0.Add(2*day + time.Minute)}, 4, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			if err := s.URLs(ctx, tc.q, func(u string) error { urls = append(urls, u); return nil }); err != nil {
				t.Fatal(err)
			}
			var vs []Version
			if err := s.Scan(ctx, tc.q, func(v Version) error { vs = append(vs, v); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(urls) != tc.urls || len(vs) != tc.vers {
				t.Fatalf("%d urls, %d versions; want %d, %d", len(urls), len(vs), tc.urls, tc.vers)
			}
			for i, v := range vs {
				if !tc.q.contains(v.Time) {
					t.Fatalf("version at %v outside %v-%v", v.Time, tc.q.From, tc.q.To)
				}
				if i > 0 && vs[i-1].URL == v.URL && !vs[i-1].Time.Before(v.Time) {
					t.Fatal("versions of a URL not in time order")
				}
			}
		})
	}
	if err := s.URLs(ctx, Query{Prefix: "a.example/"}, func(string) error { return nil }); err == nil {
		t.Fatal("prefix without scheme accepted")
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Scan(ctx, Query{}, func(Version) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("callback error not returned: %v after %d", err, n)
	}
}

func TestTouchAndChecks(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://a.example/"
	if err := s.Touch(ctx, u, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("touch of an unknown url: %v", err)
	}
	mustPut(t, s, capture(u, t0, "x"))
	mustPut(t, s, capture(u, t0.Add(day), "x"))       // unchanged: a check
	must(t, s.Touch(ctx, u, t0.Add(2*day)))           // a 304
	must(t, s.Touch(ctx, u, t0.Add(2*day+time.Hour))) // same day: replaces
	checks, err := s.Checks(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{t0.Add(day), t0.Add(2*day + time.Hour)}
	if !slices.EqualFunc(checks, want, time.Time.Equal) {
		t.Fatalf("checks %v, want %v", checks, want)
	}
}

func TestImportAndReadFile(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{NoSync: true})
	dst := openTest(t, Options{NoSync: true})
	for i := 0; i < 30; i++ {
		u := fmt.Sprintf("http://r.example/%d", i)
		mustPut(t, src, capture(u, t0, "v1 "+u))
		mustPut(t, src, capture(u, t0.Add(day), "v2 "+u))
	}
	ents, err := src.Entries(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := src.ReadFile(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, added, err := dst.Import(ctx, e.Name(), data); err != nil || !added {
			t.Fatalf("import %s: %v %v", e.Name(), added, err)
		}
		if _, added, err := dst.Import(ctx, e.Name(), data); err != nil || added {
			t.Fatalf("second import %s: %v %v", e.Name(), added, err)
		}
	}
	a, _ := src.RangeSum(ctx, id.ID{}, id.ID{})
	b, _ := dst.RangeSum(ctx, id.ID{}, id.ID{})
	if a != b || a.Count != 60 {
		t.Fatalf("replica sums differ: %v vs %v", a, b)
	}
	if src.Stats().Bytes != dst.Stats().Bytes || dst.Stats().URLs != 30 {
		t.Fatalf("stats differ: %+v vs %+v", src.Stats(), dst.Stats())
	}

	data, _ := src.ReadFile(ctx, ents[0])
	wrongDay := ents[0]
	wrongDay.Day++
	wrongDigest := ents[0]
	wrongDigest.Digest = id.Sum([]byte("other"))
	other := ents[1]
	bad := map[string][]byte{
		wrongDay.Name():    data,
		wrongDigest.Name(): data,
		other.Name():       data,
		ents[0].Name():     data[:len(data)-5],
		"junk.warc.gz":     data,
	}
	fresh := openTest(t, Options{NoSync: true})
	for name, d := range bad {
		if _, _, err := fresh.Import(ctx, name, d); err == nil {
			t.Errorf("import of bad file %s accepted", name)
		}
	}
	if st := fresh.Stats(); st.Versions != 0 || st.Bytes != 0 {
		t.Fatalf("bad imports stored something: %+v", st)
	}
	missing := ents[2]
	missing.Seq = 7
	if _, err := src.ReadFile(ctx, missing); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}

func TestImportRespectsQuota(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{NoSync: true})
	v, _ := mustPut(t, src, capture("http://q.example/", t0, "payload"))
	e := v.Entry()
	data, _ := src.ReadFile(ctx, e)
	dst := openTest(t, Options{NoSync: true, Quota: int64(len(data)) - 1})
	if _, _, err := dst.Import(ctx, e.Name(), data); !errors.Is(err, ErrQuota) {
		t.Fatalf("import over quota: %v", err)
	}
	if !dst.Stats().QuotaReached {
		t.Fatal("quota not reported")
	}
}
