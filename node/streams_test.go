package node

import (
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node/export"
)

// cdxRow is a CDX row or an exported record as both can name it: URL,
// 14-digit timestamp and payload digest (hex), with the media type and
// status of the CDX row.
type cdxRow struct {
	url, ts, digest string
	mime            string
	status          int
}

func (r cdxRow) key() string { return r.url + " " + r.ts + " " + r.digest }

// cdxRows lists /cdx?params ring-wide through gw, paging by resume key.
func cdxRows(t *testing.T, gw string, params string) []cdxRow {
	t.Helper()
	var out []cdxRow
	key := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("cdx paging does not end")
		}
		u := gw + "cdx?" + params + "&output=json&fl=original,timestamp,digest,mimetype,statuscode&showResumeKey=true&limit=500"
		if key != "" {
			u += "&resumeKey=" + url.QueryEscape(key)
		}
		body, _ := httpGet(t, u)
		var rows [][]string
		if strings.TrimSpace(body) == "" {
			return out
		}
		if err := json.Unmarshal([]byte(body), &rows); err != nil {
			t.Fatalf("cdx %s: %v: %.200q", params, err, body)
		}
		key = ""
		if n := len(rows); n >= 2 && len(rows[n-2]) == 0 {
			key, rows = rows[n-1][0], rows[:n-2]
		}
		for _, r := range rows[min(1, len(rows)):] {
			d, err := base32.StdEncoding.DecodeString(r[2])
			if err != nil {
				t.Fatal(err)
			}
			st := 0
			for _, c := range r[4] {
				st = st*10 + int(c-'0')
			}
			out = append(out, cdxRow{url: r[0], ts: r[1], digest: hex.EncodeToString(d), mime: r[3], status: st})
		}
		if key == "" {
			return out
		}
	}
}

// exportRows exports /export?params through gw and returns its records,
// in stream order, and their cursors; the stream must be complete.
func exportRows(t *testing.T, gw string, params string) ([]string, []string) {
	t.Helper()
	body, tr := httpGet(t, gw+"export?"+params)
	if body != "" && tr.Get(gateway.TrailerExportStatus) != "complete" {
		t.Fatalf("export %s: %q %s", params, tr.Get(gateway.TrailerExportStatus), tr.Get(gateway.TrailerExportError))
	}
	var keys, cursors []string
	for _, r := range readRecords(t, []byte(body)) {
		u, rest, _ := strings.Cut(r.cursor, " ")
		_, d, _ := strings.Cut(rest, " ")
		keys = append(keys, u+" "+gateway.FormatTimestamp(r.time)+" "+d)
		cursors = append(cursors, r.cursor)
	}
	return keys, cursors
}

// keysOf returns the rows' keys, sorted.
func keysOf(rows []cdxRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.key()
	}
	slices.Sort(out)
	return out
}

// sorted returns a sorted copy of keys.
func sorted(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return out
}

// TestRingStreams: on a four-node ring that crawled the sample web on two
// days, each selection of /export returns exactly the records the CDX API
// lists for the same filter; the whole archive split in 4 parts is the
// whole set, disjoint; a filtered stream resumed after any of a few
// records misses and repeats nothing.
func TestRingStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the four-node ring")
	}
	ctx, cancel := dayContext(t, 150*time.Second)
	defer cancel()
	web, lr := startWebAndRing(ctx, t, 4, sampleweb.Config{Hosts: 2, Pages: 40})
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	web.SetDay(1)
	for _, n := range lr.Nodes {
		if err := n.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	gw := lr.Nodes[1].GatewayURL()
	var hosts []string
	var all []cdxRow
	for _, s := range web.Seeds() {
		h := export.LowerHost(s)
		hosts = append(hosts, h)
		all = append(all, cdxRows(t, gw, "url="+url.QueryEscape(h)+"&matchType=host")...)
	}
	byURL := map[string]int{}
	for _, r := range all {
		byURL[r.url]++
	}
	if len(all) < 60 || len(byURL) == len(all) {
		t.Fatalf("%d captures of %d URLs: the test needs more, some with two versions", len(all), len(byURL))
	}
	// where keeps the rows of all that f keeps.
	where := func(f func(cdxRow) bool) []string {
		var out []cdxRow
		for _, r := range all {
			if f(r) {
				out = append(out, r)
			}
		}
		return keysOf(out)
	}
	h0 := hosts[0]
	// The second of the median capture: both days were crawled just now.
	var stamps []string
	for _, r := range all {
		stamps = append(stamps, r.ts)
	}
	slices.Sort(stamps)
	mid := stamps[len(stamps)/2]
	// A URL's newest capture is its last row: the CDX lists a URL's
	// captures oldest first, by their full time (both days may fall in one
	// second, so two rows can share a timestamp).
	newest := map[string]string{}
	for _, r := range all {
		newest[r.url] = r.key()
	}
	surt0 := strings.TrimSuffix(archive.Surt("http://"+h0+"/"), "/")
	for _, c := range []struct {
		name, export string
		want         []string
	}{
		{"host", "host=" + h0, keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host"))},
		{"prefix", "prefix=" + url.QueryEscape("http://"+h0+"/"), keysOf(cdxRows(t, gw, "url="+url.QueryEscape("http://"+h0+"/*")))},
		{"domain", "domain=" + h0, keysOf(cdxRows(t, gw, "url="+h0+"&matchType=domain"))},
		{"type", "host=" + h0 + "&type=text/html", keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host&filter=mimetype:text/html"))},
		{"status", "host=" + h0 + "&status=200", keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host&filter=statuscode:200"))},
		{"regex", "host=" + h0 + "&regex=" + url.QueryEscape(`.*/[0-9]*[13579]\.html`), keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host&filter="+url.QueryEscape(`original:.*/[0-9]*[13579]\.html`)))},
		{"dates", "host=" + h0 + "&from=" + mid, keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host&from="+mid))},
		{"surt", "surt=" + url.QueryEscape(surt0), keysOf(cdxRows(t, gw, "url="+h0+"&matchType=host&filter="+url.QueryEscape("urlkey:"+regexp.QuoteMeta(surt0)+".*")))},
		{"all", "all=1", keysOf(all)},
		{"latest", "all=1&latest=1", where(func(r cdxRow) bool { return r.key() == newest[r.url] })},
		{"sample", "all=1&sample=30%25", where(func(r cdxRow) bool { return archive.InSample(r.url, 300000) })},
		{"latest-html-sample", "all=1&latest=1&type=text/html&sample=0.5", func() []string {
			latestHTML := map[string]string{}
			for _, r := range all {
				if r.mime == "text/html" {
					latestHTML[r.url] = r.key()
				}
			}
			return where(func(r cdxRow) bool {
				return r.mime == "text/html" && r.key() == latestHTML[r.url] && archive.InSample(r.url, 500000)
			})
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.want) == 0 || (c.name != "all" && c.name != "domain" && c.name != "prefix" && c.name != "surt" && len(c.want) >= len(all)) {
				t.Fatalf("the CDX lists %d of %d captures for this filter: the test needs a proper subset", len(c.want), len(all))
			}
			got, _ := exportRows(t, lr.Nodes[2].GatewayURL(), c.export)
			if g := sorted(got); !slices.Equal(g, c.want) {
				t.Fatalf("export %s: %d records, the CDX lists %d", c.export, len(g), len(c.want))
			}
		})
	}

	t.Run("parts", func(t *testing.T) {
		seen := map[string]int{}
		for i := 1; i <= 4; i++ {
			got, _ := exportRows(t, lr.Nodes[i%4].GatewayURL(), "all=1&part="+strconv.Itoa(i)+"/4")
			if len(got) == 0 || len(got) == len(all) {
				t.Errorf("part %d of 4: %d of %d records", i, len(got), len(all))
			}
			for _, k := range got {
				seen[k]++
			}
		}
		for _, k := range keysOf(all) {
			if seen[k] != 1 {
				t.Errorf("%s in %d parts, want 1", k, seen[k])
			}
			delete(seen, k)
		}
		if len(seen) > 0 {
			t.Errorf("parts hold %d records the CDX does not list", len(seen))
		}
	})

	t.Run("resume", func(t *testing.T) {
		const sel = "all=1&type=text/html"
		whole, cursors := exportRows(t, gw, sel)
		if len(whole) < 10 {
			t.Fatalf("%d records", len(whole))
		}
		for _, i := range []int{0, len(whole) / 3, len(whole) / 2, len(whole) - 2} {
			rest, _ := exportRows(t, lr.Nodes[3].GatewayURL(), sel+"&after="+url.QueryEscape(cursors[i]))
			if got := append(slices.Clone(whole[:i+1]), rest...); !slices.Equal(got, whole) {
				t.Fatalf("resumed after record %d: %d records, want the %d of the whole stream once each", i, len(got), len(whole))
			}
		}
		// The text export says each line's status and resumes the same way.
		body, _ := httpGet(t, gw+"export?format=text&"+sel)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		for _, l := range lines {
			var tl exchange.TextLine
			if err := json.Unmarshal([]byte(l), &tl); err != nil || tl.Status < 200 || tl.Status >= 400 {
				t.Fatalf("text line %.200q: %v", l, err)
			}
		}
	})
}
