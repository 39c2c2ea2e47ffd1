package gateway

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// TestParseExportQuerySelection: every scope and filter of /export (and
// herod export's flags, which are the same parameters) reads into the one
// selection; malformed or conflicting ones are refused with ErrQuery.
func TestParseExportQuerySelection(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want cdx.Query
	}{
		{"domain=Example.com", cdx.Query{Match: cdx.MatchDomain, URL: "example.com"}},
		{"surt=com,example)/docs", cdx.Query{Match: cdx.MatchSURT, URL: "com,example)/docs"}},
		{"all=1", cdx.Query{Match: cdx.MatchAll}},
		{"all=true&latest=1", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Latest: true}}},
		{"host=example.com&type=Image/*&status=404", cdx.Query{Match: cdx.MatchHost, URL: "example.com", Filter: archive.Filter{Type: "image/*", Status: 404}}},
		{"all=1&regex=.*%5C.pdf", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Regex: `.*\.pdf`}}},
		{"all=1&sample=1%25", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Sample: 10000}}},
		{"all=1&sample=0.5", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Sample: 500000}}},
		{"all=1&sample=100%25", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Sample: archive.SampleAll}}},
		{"all=1&part=3/4", cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Part: 3, Parts: 4}}},
		{"all=0&host=example.com", cdx.Query{Match: cdx.MatchHost, URL: "example.com"}},
	} {
		p, _ := url.ParseQuery(tc.q)
		got, err := ParseExportQuery(p)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.q, got, err, tc.want)
		}
	}
	for _, q := range []string{
		"",
		"all=0",
		"all=yes",
		"all=1&host=example.com",
		"domain=example.com&surt=com,example)",
		"surt=" + strings.Repeat("a", 70000),
		"all=1&regex=(",
		"all=1&regex=" + strings.Repeat("a", archive.MaxRegexLen+1),
		"all=1&type=html",
		"all=1&status=abc",
		"all=1&status=42",
		"all=1&sample=0",
		"all=1&sample=101%25",
		"all=1&sample=NaN",
		"all=1&sample=0.0000001",
		"all=1&part=5/4",
		"all=1&part=0/4",
		"all=1&part=1",
		"all=1&part=1/0",
		"all=1&latest=2",
		"all=1&latest=1&revisits=1",
	} {
		p, _ := url.ParseQuery(q)
		if _, err := ParseExportQuery(p); !errors.Is(err, ErrQuery) {
			t.Errorf("%.80s: %v, want ErrQuery", q, err)
		}
	}
}

// TestExportNameSelection: an export's file name says its scope and part.
func TestExportNameSelection(t *testing.T) {
	for _, c := range []struct {
		q    cdx.Query
		want string
	}{
		{cdx.Query{Match: cdx.MatchAll}, "herod-all.warc.gz"},
		{cdx.Query{Match: cdx.MatchAll, Filter: archive.Filter{Part: 2, Parts: 4}}, "herod-all-part2of4.warc.gz"},
		{cdx.Query{Match: cdx.MatchDomain, URL: "example.com"}, "herod-example.com.warc.gz"},
		{cdx.Query{Match: cdx.MatchSURT, URL: "com,example)/a"}, "herod-com_example__a.warc.gz"},
	} {
		if got := exportName(c.q); got != c.want {
			t.Errorf("%+v: %q, want %q", c.q, got, c.want)
		}
	}
}
