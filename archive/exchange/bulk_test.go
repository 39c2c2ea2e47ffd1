package exchange

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/archive"
)

func TestLinks(t *testing.T) {
	warc := exportWARC(t, fixtureStore(t))
	var out bytes.Buffer
	var cursors []string
	st, err := Links(bytes.NewReader(warc), &out, func(m *Member) { cursors = append(cursors, m.URL()) })
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		// home, day 0: links in canonical form, the fragment and mailto:
		// gone; the anchor text last, empty for an image
		"http://site.example/\thttp://site.example/about.html\t2026-03-01\tAbout",
		"http://site.example/\thttp://site.example/logo.png\t2026-03-01\t",
		"http://site.example/\thttps://other.example/\t2026-03-01\tOther",
		"http://site.example/about.html\thttp://site.example/\t2026-03-01\thome",
		"http://site.example/about.html\thttp://site.example/\t2026-03-03\thome",
		"http://site.example/about.html\thttp://site.example/logo.png\t2026-03-03\t",
	}
	if !slices.Equal(got, want) {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The revisit and the image add no lines; three HTML versions.
	if st.Versions != 3 || st.Lines != 6 || len(cursors) != 3 {
		t.Errorf("stats %+v, %d progress calls", st, len(cursors))
	}
}

func TestTexts(t *testing.T) {
	warc := exportWARC(t, fixtureStore(t))
	var out bytes.Buffer
	st, err := Texts(bytes.NewReader(warc), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []TextLine
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var l TextLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if st.Versions != 3 || len(lines) != 3 {
		t.Fatalf("stats %+v, %d lines", st, len(lines))
	}
	home := lines[0]
	if home.URL != siteHome || home.Timestamp != "20260301100000" || home.Title != homeTitle ||
		home.Text != homeText+" About Other mail" || home.Peer != "12D3KooWTestPeer" || !strings.HasPrefix(home.Digest, "sha1:") {
		t.Errorf("home text line %+v", home)
	}
	if lines[2].Text != "About v2 home" {
		t.Errorf("about v2 text %q", lines[2].Text)
	}
}

func TestParseHTMLBase(t *testing.T) {
	p := ParseHTML("http://a.example/x/y.html", []byte(`<base href="/b/"><a href="c">c</a><img src="//d.example/i.png"><a href="javascript:void 0">j</a>`))
	want := []string{"http://a.example/b/c", "http://d.example/i.png"}
	if !slices.Equal(p.Links, want) {
		t.Errorf("links %v, want %v", p.Links, want)
	}
}

func FuzzParseHTML(f *testing.F) {
	f.Add("http://a.example/", []byte(homeHTML()))
	f.Add("http://a.example/", []byte(`<base href="x"><title>t</title><script><a href=1></script>`))
	f.Fuzz(func(t *testing.T, u string, b []byte) {
		p := ParseHTML(u, b)
		for _, l := range p.Links {
			if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				t.Fatalf("link %q is not http(s)", l)
			}
		}
		if len(p.Text) > maxText {
			t.Fatalf("text of %d bytes", len(p.Text))
		}
	})
}

func FuzzRecords(f *testing.F) {
	s := fixtureStore(f)
	f.Add(exportWARC(f, s))
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var off int64
		_ = Records(bytes.NewReader(b), func(m *Member) error {
			if m.Offset != off || m.Offset+int64(len(m.Raw)) > int64(len(b)) {
				t.Fatalf("member at %d of %d bytes in a %d-byte stream", m.Offset, len(m.Raw), len(b))
			}
			off += int64(len(m.Raw))
			_, _, _, _ = m.HTTP()
			return nil
		})
	})
}

func TestMemberCursor(t *testing.T) {
	s := fixtureStore(t)
	warc := exportWARC(t, s)
	var cursors []string
	if err := Records(bytes.NewReader(warc), func(m *Member) error {
		cursors = append(cursors, m.Cursor())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Resuming after each record's cursor gives exactly the records after it.
	for i, c := range cursors {
		var rest bytes.Buffer
		if _, err := s.Export(context.Background(), archive.ExportOptions{Revisits: true, After: c}, &rest, nil); err != nil {
			t.Fatalf("resume after %q: %v", c, err)
		}
		var got []string
		if err := Records(&rest, func(m *Member) error { got = append(got, m.Cursor()); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, cursors[i+1:]) {
			t.Errorf("after %q: %v, want %v", c, got, cursors[i+1:])
		}
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{homeHTML(), homeTitle},
		{"<title>a <b>x</b>\n b</title><title>second</title>", "a <b>x</b> b"},
		{"<body><title>late</title>", ""},
		{"<title>unterminated", "unterminated"},
	} {
		if got := Title([]byte(tc.in)); got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
