package gateway

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// cdxArchive holds captures on a domain and its subdomain, with peers.
func cdxArchive(t testing.TB) *listingArchive {
	f := newFake()
	f.add(t, "http://example.com/", "20200101120000", 200, "text/html; charset=utf-8", "home 1")
	f.add(t, "http://example.com/", "20200601000000", 200, "text/html", "home 2")
	f.add(t, "http://example.com/", "20210615000000", 304, "text/html", "home 2")
	f.add(t, "http://example.com/", "20220301080000", 200, "text/html", "home 3")
	f.add(t, "http://example.com/a.css", "20200101120001", 200, "text/css", "css")
	f.add(t, "http://example.com/img.png", "20210101000000", 200, "image/png", "png")
	f.add(t, "http://sub.example.com/x", "20210101000000", 404, "text/html", "gone")
	f.add(t, "http://notexample.com/", "20210101000000", 200, "text/html", "other")
	f.setPeers(t, func(u string, i int) string { return "peer-" + u[7:10] + string(rune('0'+i)) })
	return &listingArchive{fakeArchive: f}
}

func b32sha1(s string) string {
	d := sha1.Sum([]byte(s))
	return base32.StdEncoding.EncodeToString(d[:])
}

// TestCDXFields checks the fields of each output, value by value, against
// the formats of the Wayback CDX server and pywb.
func TestCDXFields(t *testing.T) {
	s := newServer(t, cdxArchive(t))
	// Wayback json: field names, then one array per capture.
	w := get(t, s, "/cdx?url=example.com&output=json&limit=1")
	var rows [][]string
	if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("json: %v %q", err, w.Body)
	}
	want := [][]string{
		{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"},
		{"com,example)/", "20200101120000", "http://example.com/", "text/html", "200", b32sha1("home 1"), "6"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("json rows %q, want %q", rows, want)
	}
	// Wayback text with fl, including herod's peer.
	cases := []struct{ q, want string }{
		{"url=example.com&fl=timestamp,statuscode,peer", "20200101120000 200 peer-exa0\n20200601000000 200 peer-exa1\n20210615000000 304 peer-exa2\n20220301080000 200 peer-exa3\n"},
		{"url=example.com&fl=original,mimetype&limit=1&output=text", "http://example.com/ text/html\n"},
		{"url=example.com&fl=urlkey,offset,filename&limit=1", "com,example)/ 0 objects/"},
		// pywb cdxj: urlkey and timestamp first, then the JSON fields.
		{"url=example.com&limit=1", `com,example)/ 20200101120000 {"url":"http://example.com/","mime":"text/html","status":"200","digest":"` + b32sha1("home 1") + `","length":"6","offset":"0","filename":"objects/`},
		{"url=example.com&limit=1&output=cdxj&fl=status,peer", `com,example)/ 20200101120000 {"status":"200","peer":"peer-exa0"}` + "\n"},
		{"url=example.com&limit=1&output=ndjson&fl=urlkey,timestamp,url", `{"urlkey":"com,example)/","timestamp":"20200101120000","url":"http://example.com/"}` + "\n"},
		// link: Memento TimeMap entries.
		{"url=example.com&limit=2&output=link", `<` + uiOrigin + `/web/20200101120000/http://example.com/>; rel="memento"; datetime="Wed, 01 Jan 2020 12:00:00 GMT",` + "\n" +
			`<` + uiOrigin + `/web/20200601000000/http://example.com/>; rel="memento"; datetime="Mon, 01 Jun 2020 00:00:00 GMT"` + "\n"},
	}
	for _, tc := range cases {
		w := get(t, s, "/cdx?"+tc.q)
		if w.Code != 200 || !strings.HasPrefix(w.Body.String(), tc.want) {
			t.Errorf("cdx?%s: %d %q, want prefix %q", tc.q, w.Code, w.Body, tc.want)
		}
	}
}

// cdxCol returns one column of text output (fl with one field).
func cdxCol(t *testing.T, s *Server, q string) []string {
	t.Helper()
	w := get(t, s, "/cdx?"+q)
	if w.Code != 200 {
		t.Fatalf("cdx?%s: %d %s", q, w.Code, w.Body)
	}
	body := strings.TrimSpace(w.Body.String())
	if body == "" {
		return nil
	}
	return strings.Split(body, "\n")
}

// TestCDXParameters checks what each parameter selects and in what order.
func TestCDXParameters(t *testing.T) {
	s := newServer(t, cdxArchive(t))
	const rowsFl = "&fl=original,timestamp"
	cases := []struct {
		q    string
		want []string
	}{
		{"url=example.com", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000", "http://example.com/ 20210615000000", "http://example.com/ 20220301080000"}},
		// matchType and its shorthands
		{"url=example.com/*", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000", "http://example.com/ 20210615000000", "http://example.com/ 20220301080000", "http://example.com/a.css 20200101120001", "http://example.com/img.png 20210101000000"}},
		{"url=example.com/a&matchType=prefix", []string{"http://example.com/a.css 20200101120001"}},
		{"url=sub.example.com&matchType=host", []string{"http://sub.example.com/x 20210101000000"}},
		{"url=*.example.com&filter=!original:http://example.com/", []string{"http://example.com/a.css 20200101120001", "http://example.com/img.png 20210101000000", "http://sub.example.com/x 20210101000000"}},
		{"url=example.com&matchType=domain&from=2021&to=2021&filter=!original:.*/", []string{"http://example.com/img.png 20210101000000", "http://sub.example.com/x 20210101000000"}},
		// from/to: partial timestamps pad down and up
		{"url=example.com&from=2020&to=2020", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000"}},
		{"url=example.com&from=202006", []string{"http://example.com/ 20200601000000", "http://example.com/ 20210615000000", "http://example.com/ 20220301080000"}},
		{"url=example.com&to=20200101120000", []string{"http://example.com/ 20200101120000"}},
		// limit, negative: the last N, ascending
		{"url=example.com&limit=2", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000"}},
		{"url=example.com&limit=-2", []string{"http://example.com/ 20210615000000", "http://example.com/ 20220301080000"}},
		// filter: regexp (whole value), =, ~, negation
		{"url=example.com/*&filter=statuscode:2..&filter=mimetype:text/.*", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000", "http://example.com/ 20220301080000", "http://example.com/a.css 20200101120001"}},
		{"url=example.com/*&filter=!statuscode:200", []string{"http://example.com/ 20210615000000"}},
		{"url=example.com/*&filter==mimetype:image/png", []string{"http://example.com/img.png 20210101000000"}},
		{"url=example.com/*&filter=~original:css", []string{"http://example.com/a.css 20200101120001"}},
		{"url=example.com/*&filter=mimetype:text", nil},
		{"url=example.com&filter=peer:peer-exa[13]", []string{"http://example.com/ 20200601000000", "http://example.com/ 20220301080000"}},
		// collapse: adjacent equal values (or prefixes) keep the first
		{"url=example.com&collapse=timestamp:4", []string{"http://example.com/ 20200101120000", "http://example.com/ 20210615000000", "http://example.com/ 20220301080000"}},
		{"url=example.com/*&collapse=urlkey", []string{"http://example.com/ 20200101120000", "http://example.com/a.css 20200101120001", "http://example.com/img.png 20210101000000"}},
		{"url=example.com&collapse=digest", []string{"http://example.com/ 20200101120000", "http://example.com/ 20200601000000", "http://example.com/ 20220301080000"}},
		{"url=example.com&collapse=timestamp:4&sort=reverse", []string{"http://example.com/ 20220301080000", "http://example.com/ 20210615000000", "http://example.com/ 20200601000000"}},
		// sort
		{"url=example.com&sort=reverse&limit=2", []string{"http://example.com/ 20220301080000", "http://example.com/ 20210615000000"}},
		{"url=example.com&sort=closest&closest=20210101", []string{"http://example.com/ 20210615000000", "http://example.com/ 20200601000000", "http://example.com/ 20200101120000", "http://example.com/ 20220301080000"}},
		{"url=example.com&sort=closest&closest=2022&limit=1", []string{"http://example.com/ 20220301080000"}},
	}
	for _, tc := range cases {
		if got := cdxCol(t, s, tc.q+rowsFl); !slices.Equal(got, tc.want) {
			t.Errorf("cdx?%s:\n got %q\nwant %q", tc.q, got, tc.want)
		}
	}
	for _, tc := range []struct{ q, msg string }{
		{"url=example.com&fl=size", "fl field"},
		{"url=example.com&collapse=size", "collapse field"},
		{"url=example.com&collapse=timestamp:x", "collapse length"},
		{"url=example.com&sort=closest", "closest=<timestamp>"},
		{"url=example.com/*&sort=closest&closest=2020", "matchType=exact"},
		{"url=example.com&sort=reverse&limit=-1", "negative limit"},
		{"url=example.com&closest=2020", "sort=closest"},
		{"url=example.com&sort=up", "sort"},
		{"url=example.com&limit=1000001", "limit"},
		{"url=example.com&resumeKey=zz", "resumeKey"},
		{"url=example.com&output=link&showResumeKey=true", "resume key"},
		{"url=example.com&showResumeKey=maybe", "showResumeKey"},
	} {
		w := get(t, s, "/cdx?"+tc.q)
		if w.Code != 400 || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("cdx?%s: %d %q, want 400 mentioning %q", tc.q, w.Code, w.Body, tc.msg)
		}
	}
}

// TestCDXResumeKey pages through a result two rows at a time in each
// output and gets every row exactly once, in order.
func TestCDXResumeKey(t *testing.T) {
	s := newServer(t, cdxArchive(t))
	all := cdxCol(t, s, "url=*.example.com&fl=original,timestamp")
	if len(all) != 7 {
		t.Fatalf("%d rows, want 7", len(all))
	}
	for _, order := range []string{"", "&sort=reverse"} {
		want := slices.Clone(all)
		if order != "" {
			slices.Reverse(want)
		}
		var got []string
		key := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			q := "url=*.example.com&fl=original,timestamp&limit=2&showResumeKey=true" + order
			if key != "" {
				q += "&resumeKey=" + key // pasted as printed, as Wayback clients do
			}
			lines := cdxCol(t, s, q)
			if i := slices.Index(lines, ""); i >= 0 {
				key = lines[i+1]
				got = append(got, lines[:i]...)
				continue
			}
			got = append(got, lines...)
			break
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged%s:\n got %q\nwant %q", order, got, want)
		}
	}
	// json: [] then [key]; the key works query-escaped too.
	w := get(t, s, "/cdx?url=*.example.com&output=json&limit=3&showResumeKey=true&fl=timestamp")
	var rows [][]string
	if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil || len(rows) != 6 || len(rows[4]) != 0 || len(rows[5]) != 1 {
		t.Fatalf("json with resume key: %q", w.Body)
	}
	w = get(t, s, "/cdx?url=*.example.com&output=json&fl=timestamp&resumeKey="+url.QueryEscape(rows[5][0]))
	if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil || len(rows) != 5 {
		t.Fatalf("json after the key: %d %q", w.Code, w.Body)
	}
}

// TestCDXCap refuses a query over the cap with a message, and pages it
// with showResumeKey.
func TestCDXCap(t *testing.T) {
	defer func(c int) { cdxCap = c }(cdxCap)
	cdxCap = 3
	s := newServer(t, cdxArchive(t))
	w := get(t, s, "/cdx?url=example.com/*")
	if w.Code != 400 || !strings.Contains(w.Body.String(), "more than 3 captures") || !strings.Contains(w.Body.String(), "showResumeKey=true") {
		t.Errorf("over the cap: %d %q", w.Code, w.Body)
	}
	if w := get(t, s, "/cdx?url=example.com/*&limit=2"); w.Code != 200 {
		t.Errorf("limit under the cap: %d", w.Code)
	}
	// Filters examine rows too: a filter matching little pages by the cap.
	w = get(t, s, "/cdx?url=example.com/*&filter=mimetype:image/.*&showResumeKey=true&fl=original")
	lines := strings.Split(w.Body.String(), "\n")
	if w.Code != 200 || len(lines) != 3 || lines[0] != "" {
		t.Fatalf("first page examines 3 rows, finds no image: %q", w.Body)
	}
	lines = cdxCol(t, s, "url=example.com/*&filter=mimetype:image/.*&showResumeKey=true&fl=original&resumeKey="+lines[1])
	if len(lines) != 1 || lines[0] != "http://example.com/img.png" {
		t.Errorf("second page: %q", lines)
	}
}

// witnessPager is a Pager whose every row has a fetcher and two
// witnesses.
type witnessPager struct{ *listingArchive }

func (p witnessPager) Page(ctx context.Context, req cdx.PageRequest) ([]cdx.Row, bool, error) {
	rows, more, err := listPager{a: p.listingArchive, list: p.listingArchive}.Page(ctx, req)
	for i := range rows {
		rows[i].Peer, rows[i].Witnesses = "", nil
		if req.Peers {
			rows[i].Peer = "12D3KooWfetcher"
			rows[i].Witnesses = []archive.Witness{
				{Peer: "12D3KooWwitA", Seen: rows[i].Time.Add(time.Minute)},
				{Peer: "12D3KooWwitB", Seen: rows[i].Time.Add(time.Hour)},
			}
		}
	}
	return rows, more, err
}

// TestCDXProvenance: the CDX says who fetched each capture and who
// witnessed it when, in every output: cdxj and ndjson by default (an
// array of objects), text and json when fl asks.
func TestCDXProvenance(t *testing.T) {
	s := newServer(t, witnessPager{cdxArchive(t)})
	wits := "12D3KooWwitA@20200101120100,12D3KooWwitB@20200101130000"
	for _, tc := range []struct{ q, want string }{
		{"url=example.com&limit=1&fl=timestamp,peer,witnesses", "20200101120000 12D3KooWfetcher " + wits + "\n"},
		{"url=example.com&limit=1&output=json&fl=timestamp,witnesses", `[["timestamp","witnesses"],["20200101120000","` + wits + `"]]` + "\n"},
		{"url=example.com&limit=1&output=ndjson&fl=timestamp,peer,witnesses", `{"timestamp":"20200101120000","peer":"12D3KooWfetcher","witnesses":[{"peer":"12D3KooWwitA","seen":"20200101120100"},{"peer":"12D3KooWwitB","seen":"20200101130000"}]}` + "\n"},
		{"url=example.com&limit=1&filter=~witnesses:witB&fl=timestamp", "20200101120000\n"},
	} {
		w := get(t, s, "/cdx?"+tc.q)
		if w.Code != 200 || w.Body.String() != tc.want {
			t.Errorf("cdx?%s: %d %q, want %q", tc.q, w.Code, w.Body, tc.want)
		}
	}
	// The default cdxj object ends with the fetcher and witnesses.
	w := get(t, s, "/cdx?url=example.com&limit=1")
	line := w.Body.String()
	var obj struct {
		Peer      string `json:"peer"`
		Witnesses []struct{ Peer, Seen string }
	}
	if err := json.Unmarshal([]byte(line[strings.IndexByte(line, '{'):]), &obj); err != nil ||
		obj.Peer != "12D3KooWfetcher" || len(obj.Witnesses) != 2 || obj.Witnesses[0].Seen != "20200101120100" {
		t.Errorf("default cdxj %q: %+v %v", line, obj, err)
	}
}
