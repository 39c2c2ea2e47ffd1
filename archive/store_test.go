package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.UTC)

func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func capture(url string, at time.Time, body string) Capture {
	return Capture{
		URL: url, Time: at, Status: 200,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Etag": {`"x"`}},
		Body:   []byte(body),
	}
}

func mustPut(t testing.TB, s *Store, c Capture) (Version, bool) {
	t.Helper()
	v, added, err := s.Put(context.Background(), c)
	if err != nil {
		t.Fatalf("put %s: %v", c.URL, err)
	}
	return v, added
}

func TestPutReadRoundTrip(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	c := capture("http://a.example/p", t0, "<html>hello</html>")
	c.Header.Set("Transfer-Encoding", "chunked")
	c.Header.Set("Content-Length", "999")
	v, added := mustPut(t, s, c)
	if !added {
		t.Fatal("first put not added")
	}
	want := Entry{Key: id.OfString(c.URL), Digest: id.Sum(c.Body), Day: t0.Unix() / 86400}
	if v.Entry() != want || v.File != "segments/00000001.warc.gz" || v.Offset != 0 || v.ContentType != "text/html" || v.Length != int64(len(c.Body)) {
		t.Fatalf("version %+v, want entry %+v at the start of the first segment", v, want)
	}
	got, err := s.Read(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != c.URL || !got.Time.Equal(t0) || got.Status != 200 || !bytes.Equal(got.Body, c.Body) {
		t.Fatalf("read %+v", got)
	}
	h := got.Header
	if h.Get("Transfer-Encoding") != "" || h.Get("X-Archive-Orig-Transfer-Encoding") != "chunked" ||
		h.Get("Content-Length") != fmt.Sprint(len(c.Body)) || h.Get("X-Archive-Orig-Content-Length") != "999" ||
		h.Get("Etag") != `"x"` {
		t.Fatalf("stored headers not self-consistent: %v", h)
	}
}

func TestPutDedupAndVersions(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://a.example/"
	day := 24 * time.Hour
	steps := []struct {
		at    time.Time
		body  string
		added bool
	}{
		{t0, "A", true},
		{t0.Add(day), "A", false},
		{t0.Add(2 * day), "B", true},
		{t0.Add(2*day + time.Hour), "A", true},
		{t0.Add(2*day + 2*time.Hour), "B", true}, // same day, same content as step 3: gets .1
		{t0.Add(3 * day), "B", false},
	}
	for i, st := range steps {
		before := s.Stats().Bytes
		_, added := mustPut(t, s, capture(u, st.at, st.body))
		if added != st.added {
			t.Fatalf("step %d: added %v, want %v", i, added, st.added)
		}
		if !added && s.Stats().Bytes != before {
			t.Fatalf("step %d: unchanged page added %d bytes", i, s.Stats().Bytes-before)
		}
	}
	vs, err := s.Versions(ctx, u)
	if err != nil || len(vs) != 4 {
		t.Fatalf("versions %d, %v", len(vs), err)
	}
	if vs[3].Seq != 1 {
		t.Fatalf("A,B,A,B on one day: last version %+v has no sequence", vs[3])
	}
	for _, v := range vs {
		if _, err := s.Read(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	at := []struct {
		t    time.Time
		want int // index into vs, -1 = not found
	}{
		{t0.Add(-time.Nanosecond), -1},
		{t0, 0},
		{t0.Add(day), 0},
		{t0.Add(2 * day), 1},
		{t0.Add(2*day + time.Hour - 1), 1},
		{t0.Add(2*day + time.Hour), 2},
		{t0.Add(100 * day), 3},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), 3},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), -1},
	}
	for _, tc := range at {
		v, err := s.At(ctx, u, tc.t)
		if tc.want < 0 {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("At(%v) = %v, %v; want ErrNotFound", tc.t, v.Time, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(v, vs[tc.want]) {
			t.Errorf("At(%v) = %v, %v; want %v", tc.t, v.Time, err, vs[tc.want].Time)
		}
	}
	if vs, err := s.Versions(ctx, "http://none.example/"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of unknown url: %v %v", vs, err)
	}
	if st := s.Stats(); st.Versions != 4 || st.URLs != 1 || st.Unchanged != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQuota(t *testing.T) {
	s := openTest(t, Options{NoSync: true, Quota: 2000})
	var stored []Version
	var refused int
	for i := 0; i < 20; i++ {
		v, _, err := s.Put(context.Background(), capture(fmt.Sprintf("http://q.example/%d", i), t0, fmt.Sprintf("page %d %x", i, i*7919)))
		switch {
		case errors.Is(err, ErrQuota):
			refused++
		case err != nil:
			t.Fatal(err)
		default:
			stored = append(stored, v)
		}
	}
	st := s.Stats()
	if refused == 0 || !st.QuotaReached || st.Refused != int64(refused) || st.Bytes > 2000 {
		t.Fatalf("quota not enforced: refused %d, stats %+v", refused, st)
	}
	for _, v := range stored {
		if _, err := s.Read(context.Background(), v); err != nil {
			t.Fatalf("stored version lost: %v", err)
		}
	}
	// An unchanged page still succeeds: it costs nothing.
	if _, added, err := s.Put(context.Background(), capture(stored[0].URL, t0.Add(time.Hour), fmt.Sprintf("page %d %x", 0, 0))); err != nil || added {
		t.Fatalf("unchanged put under full quota: %v %v", added, err)
	}
}

func TestOpenCleansTempAndReopens(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := mustPut(t, s, capture("http://a.example/", t0, "x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn record after the committed end is cut at Open.
	seg := filepath.Join(dir, v.File)
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write([]byte("\x1f\x8b\x08half a rec"))
	must(t, err)
	must(t, f.Close())
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(seg); err != nil || fi.Size() != v.Offset+v.Size {
		t.Fatalf("torn tail survived Open: %v %v", fi.Size(), err)
	}
	got, err := s.At(context.Background(), v.URL, t0)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("after reopen: %+v %v, want %+v", got, err, v)
	}
	if st := s.Stats(); st.Versions != 1 || st.URLs != 1 || st.Bytes == 0 {
		t.Fatalf("stats after reopen %+v", st)
	}
	s.Close()
	// A lost index is rebuilt at Open.
	must(t, os.RemoveAll(filepath.Join(dir, "index")))
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.At(context.Background(), v.URL, t0); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("after rebuilding a lost index: %+v %v", got, err)
	}
}

func TestReadDetectsCorruption(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	v, _ := mustPut(t, s, capture("http://a.example/", t0, "<p>some body text</p>"))
	path := filepath.Join(s.Dir(), v.File)
	orig, err := s.ReadFile(context.Background(), v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := mustPut(t, s, capture("http://b.example/", t0, "<p>other</p>"))
	otherData, _ := s.ReadFile(context.Background(), other.Entry())
	cases := map[string][]byte{
		"truncated":    orig[:len(orig)/2],
		"empty":        {},
		"flipped byte": append(append([]byte{}, orig[:len(orig)-12]...), append([]byte{orig[len(orig)-12] ^ 1}, orig[len(orig)-11:]...)...),
		"two members":  append(append([]byte{}, orig...), orig...),
		"other file":   otherData,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt(data, v.Offset)
			must(t, err)
			must(t, f.Close())
			w := v
			w.Size = int64(len(data))
			if _, err := s.Read(context.Background(), w); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read = %v, want ErrCorrupt", err)
			}
		})
	}
	gone := v
	gone.File = segmentRel(99)
	if _, err := s.Read(context.Background(), gone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing segment: %v", err)
	}
	bad := v
	bad.File = "segments/../../etc/passwd"
	if _, err := s.Read(context.Background(), bad); err == nil {
		t.Fatal("read outside objects/ accepted")
	}
}

func TestPutRejectsBadInput(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	bad := map[string]Capture{
		"empty url":    capture("", t0, "x"),
		"space in url": capture("http://a b/", t0, "x"),
		"zero time":    capture("http://a/", time.Time{}, "x"),
		"bad status":   {URL: "http://a/", Time: t0, Status: 42},
		"bad header":   {URL: "http://a/", Time: t0, Status: 200, Header: http.Header{"X": {"a\r\nb"}}},
	}
	for name, c := range bad {
		if _, _, err := s.Put(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if st := s.Stats(); st.Versions != 0 {
		t.Fatalf("bad input stored something: %+v", st)
	}
}

func TestState(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://a.example/"
	if _, err := s.State(ctx, u); !errors.Is(err, ErrNotFound) {
		t.Fatalf("state of new url: %v", err)
	}
	st := CrawlState{ETag: `"e"`, LastModified: "Fri, 20 Nov 2026 10:00:00 GMT", Digest: id.Sum([]byte("x")),
		Outlinks: []string{"http://c/", "http://b/", "http://c/"}, Checked: t0}
	if err := s.SetState(ctx, u, st); err != nil {
		t.Fatal(err)
	}
	got, err := s.State(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	want := st
	want.Outlinks = []string{"http://b/", "http://c/"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("state %+v, want %+v", got, want)
	}
	if st.Outlinks[0] != "http://c/" {
		t.Fatal("SetState modified the caller's slice")
	}
}

func TestConcurrentPuts(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	const workers, per = 8, 25
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < per; i++ {
				// Every worker writes the same URLs: each URL must end with one version.
				_, _, err := s.Put(context.Background(), capture(fmt.Sprintf("http://c.example/%d", i), t0, "same"))
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Versions != per || st.URLs != per || st.Unchanged != (workers-1)*per {
		t.Fatalf("stats %+v", st)
	}
	root, _ := s.DirHash(context.Background(), RootLevel, nil)
	if root.Count != per {
		t.Fatalf("root count %d", root.Count)
	}
}

func TestGet(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://g.example/"
	if _, _, err := s.Get(ctx, u, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of unknown url: %v", err)
	}
	v1, _ := mustPut(t, s, capture(u, t0, "one"))
	v2, _ := mustPut(t, s, capture(u, t0.Add(day), "two"))
	cases := []struct {
		at   time.Time
		want Version
		body string
	}{
		{t0.Add(-day), v1, "one"}, // before the first: the oldest
		{t0.Add(time.Hour), v1, "one"},
		{t0.Add(2 * day), v2, "two"},
	}
	for _, tc := range cases {
		v, c, err := s.Get(ctx, u, tc.at)
		if err != nil || !reflect.DeepEqual(v, tc.want) || string(c.Body) != tc.body {
			t.Errorf("Get(%v) = %v %q %v; want %v", tc.at, v.Time, c.Body, err, tc.want.Time)
		}
	}
}

// A digest the caller computed is used as given: the right one stores the
// same version as Put's own hashing; a wrong one is caught by every read.
func TestPutCallerDigest(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	c := capture("http://a.example/given", t0, "<html>given digest</html>")
	c.Digest = id.Sum(c.Body)
	v, added := mustPut(t, s, c)
	if !added || v.Digest != c.Digest {
		t.Fatalf("put with the body's digest: %+v, added %v", v, added)
	}
	if got, err := s.Read(ctx, v); err != nil || !bytes.Equal(got.Body, c.Body) {
		t.Fatalf("read back: %v", err)
	}

	bad := capture("http://a.example/wrong", t0, "<html>wrong digest</html>")
	bad.Digest = id.Sum([]byte("something else"))
	v, added = mustPut(t, s, bad)
	if !added || v.Digest != bad.Digest {
		t.Fatalf("put with a wrong digest: %+v, added %v", v, added)
	}
	if _, err := s.Read(ctx, v); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a version stored under a wrong digest: %v, want ErrCorrupt", err)
	}
}

// Capture.State is recorded with the version, and on its own when Put adds
// none; a Put that fails records nothing.
func TestPutRecordsState(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	url := "http://a.example/state"
	st := CrawlState{ETag: `"1"`, Outlinks: []string{"http://a.example/b", "http://a.example/a", "http://a.example/b"}, Checked: t0}
	c := capture(url, t0, "<html>one</html>")
	c.State = &st
	if _, added := mustPut(t, s, c); !added {
		t.Fatal("not added")
	}
	got, err := s.State(ctx, url)
	if err != nil || got.ETag != `"1"` || !reflect.DeepEqual(got.Outlinks, []string{"http://a.example/a", "http://a.example/b"}) || !got.Checked.Equal(t0) {
		t.Fatalf("state after Put = %+v, %v", got, err)
	}
	// Unchanged payload: no version, the state still recorded.
	st2 := CrawlState{ETag: `"2"`, Checked: t0.Add(time.Hour)}
	c2 := capture(url, t0.Add(time.Hour), "<html>one</html>")
	c2.State = &st2
	if _, added := mustPut(t, s, c2); added {
		t.Fatal("unchanged payload added")
	}
	if got, err := s.State(ctx, url); err != nil || got.ETag != `"2"` {
		t.Fatalf("state after unchanged Put = %+v, %v", got, err)
	}
	// A refused Put leaves the state as it was.
	q := openTest(t, Options{NoSync: true, Quota: 10})
	st3 := CrawlState{ETag: `"3"`}
	c3 := capture(url, t0, "<html>too big for the quota</html>")
	c3.State = &st3
	if _, _, err := q.Put(ctx, c3); !errors.Is(err, ErrQuota) {
		t.Fatalf("put over quota: %v", err)
	}
	if _, err := q.State(ctx, url); !errors.Is(err, ErrNotFound) {
		t.Fatalf("state after a refused Put: %v, want ErrNotFound", err)
	}
}

// TestOnAdd: the hook sees every version Put adds, once, and nothing else
// (an unchanged Put, an Import).
func TestOnAdd(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	var got []Entry
	s.OnAdd(func(v Version) { got = append(got, v.Entry()) })
	v1, _ := mustPut(t, s, capture("http://a.example/p", t0, "one"))
	mustPut(t, s, capture("http://a.example/p", t0.Add(time.Hour), "one")) // unchanged
	v2, _ := mustPut(t, s, capture("http://a.example/p", t0.Add(2*time.Hour), "two"))
	data, err := s.ReadFile(context.Background(), v2.Entry())
	if err != nil {
		t.Fatal(err)
	}
	other := openTest(t, Options{NoSync: true})
	var imported int
	other.OnAdd(func(Version) { imported++ })
	if _, added, err := other.Import(context.Background(), v2.Entry().Name(), data); err != nil || !added {
		t.Fatalf("import: %v, %v", added, err)
	}
	if len(got) != 2 || got[0] != v1.Entry() || got[1] != v2.Entry() || imported != 0 {
		t.Fatalf("OnAdd saw %v (imports %d), want %v and %v", got, imported, v1.Entry(), v2.Entry())
	}
	s.OnAdd(nil)
	mustPut(t, s, capture("http://a.example/p", t0.Add(3*time.Hour), "three"))
	if len(got) != 2 {
		t.Fatalf("OnAdd(nil) still calls: %v", got)
	}
}

// TestOnImportAndAdding: OnImport sees the versions Import adds (not
// those it holds already), and Adding counts a write until its function
// has returned.
func TestOnImportAndAdding(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	var during []int64
	s.OnAdd(func(Version) { during = append(during, s.Adding()) })
	v, _ := mustPut(t, s, capture("http://a.example/i", t0, "one"))
	if len(during) != 1 || during[0] != 1 || s.Adding() != 0 {
		t.Fatalf("Adding during OnAdd %v, after %d; want [1], 0", during, s.Adding())
	}
	data, err := s.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	other := openTest(t, Options{NoSync: true})
	var got []Entry
	other.OnImport(func(w Version) { got = append(got, w.Entry()); during = append(during, other.Adding()) })
	for range 2 {
		if _, _, err := other.Import(ctx, v.Entry().Name(), data); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != v.Entry() || during[1] != 1 || other.Adding() != 0 {
		t.Fatalf("OnImport saw %v (Adding %v, after %d), want %v once while counted", got, during, other.Adding(), v.Entry())
	}
	other.OnImport(nil)
	if _, _, err := other.Import(ctx, v.Entry().Name(), data); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("OnImport(nil) still calls: %v", got)
	}
}

// TestLeafHashes: the leaf sums are DirHash's at LeafLevel, indexed by
// LeafOf, and count every version.
func TestLeafHashes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	var urls []string
	for i := range 50 {
		u := fmt.Sprintf("http://leaf%d.example/", i%17)
		urls = append(urls, u)
		mustPut(t, s, capture(u, t0.Add(time.Duration(i)*time.Hour), fmt.Sprint("body ", i)))
	}
	ls, err := s.LeafHashes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != Leaves {
		t.Fatalf("%d leaves, want %d", len(ls), Leaves)
	}
	var total int64
	for _, d := range ls {
		total += d.Count
	}
	if total != 50 {
		t.Fatalf("leaves count %d versions, want 50", total)
	}
	for _, u := range urls {
		k := id.OfString(u)
		want, err := s.DirHash(ctx, LeafLevel, k[:])
		if err != nil {
			t.Fatal(err)
		}
		if got := ls[LeafOf(k)]; got != want {
			t.Fatalf("%s: leaf %v, DirHash %v", u, got, want)
		}
	}
}
