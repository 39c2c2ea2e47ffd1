package canon

import (
	"errors"
	"net/url"
	"slices"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"HTTP://Example.COM", "http://example.com/"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:8080/a", "http://example.com:8080/a"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/a/b/..", "http://example.com/a/"},
		{"http://example.com/x#frag", "http://example.com/x"},
		{"http://user:pw@example.com/", "http://example.com/"},
		{"http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"},
		{"http://example.com/a%20b", "http://example.com/a%20b"},
		{"http://example.com./", "http://example.com/"},
		{"http://127.0.0.2:0080/", "http://127.0.0.2/"},
		{"http://[::1]:80/", "http://[::1]/"},
		{"http://x/?a b ", "http://x/?a%20b"},
		{"http://x/?a%20", "http://x/?a%20"},
		{"http://x/?a=%41&b=%zz", "http://x/?a=A&b=%25zz"},
		{"http://example.com/a%2Fb//c", "http://example.com/a%2Fb//c"},
		{"http://bücher.de/", "http://xn--bcher-kva.de/"},
		{"http:///path", "http://path/"},
		{"http://x/?\xad", "http://x/?%AD"},
	}
	for _, tc := range tests {
		got, err := Canonical(tc.in)
		if err != nil {
			t.Errorf("Canonical(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
		}
		again, err := Canonical(got)
		if err != nil || again != got {
			t.Errorf("not idempotent: %q -> %q (%v)", got, again, err)
		}
	}
}

func TestCanonicalRejects(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"ftp://example.com/", ErrScheme},
		{"mailto:a@b.c", ErrScheme},
		{"http://", ErrNoHost},
		{"http://:80/", ErrNoHost},
		{"http://[::1/", ErrBadHost},
		{"http://a b/", ErrBadHost},
		{"http://../", ErrNoHost},
		{"http://example.com:8x/", ErrBadPort},
		{"http://example.com:999999/", ErrBadPort},
		{"http://example.com:65536/", ErrBadPort},
		{"http://example.com:0/", ErrBadPort},
		{"http://example.com/" + string(make([]byte, MaxLen)), ErrTooLong},
	}
	for _, tc := range tests {
		if _, err := Canonical(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("Canonical(%q) error = %v, want %v", tc.in, err, tc.want)
		}
	}
	if _, err := Canonical("/relative"); err == nil {
		t.Error("relative URL accepted")
	}
}

func TestResolve(t *testing.T) {
	base, _ := url.Parse("http://a.example/dir/page.html")
	tests := []struct{ ref, want string }{
		{"other.html", "http://a.example/dir/other.html"},
		{"../up.html#x", "http://a.example/up.html"},
		{"//B.example:80/p", "http://b.example/p"},
		{"/abs?q=1", "http://a.example/abs?q=1"},
	}
	for _, tc := range tests {
		got, err := Resolve(base, tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
	// A base that is not canonical gives canonical results all the same.
	loose, _ := url.Parse("HTTP://A.example.:80/x/./y/../../dir/page.html")
	tests = append(tests, struct{ ref, want string }{"http:x", "http://a.example/dir/x"})
	for _, tc := range tests {
		got, err := Resolve(loose, tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%v, %q) = %q, %v; want %q", loose, tc.ref, got, err, tc.want)
		}
	}
	if _, err := Resolve(base, "javascript:void(0)"); !errors.Is(err, ErrScheme) {
		t.Errorf("javascript: link error = %v", err)
	}
	// ResolveURL's URL is the canonical string parsed.
	for _, ref := range []string{"other.html", "../a%20b/c?x=%41#f", "//B.example:80/p", "/x/./y/../z"} {
		u, s, err := ResolveURL(base, ref)
		if err != nil {
			t.Fatalf("ResolveURL(%q): %v", ref, err)
		}
		p, err := url.Parse(s)
		if err != nil || u.String() != s || u.Host != p.Host || u.Path != p.Path || u.RawQuery != p.RawQuery {
			t.Errorf("ResolveURL(%q) = %#v, %q; Parse gives %#v", ref, u, s, p)
		}
		if want, _ := Resolve(base, ref); want != s {
			t.Errorf("ResolveURL(%q) = %q, Resolve %q", ref, s, want)
		}
	}
}

func TestSrcsetURLs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a.png", []string{"a.png"}},
		{" a.png 1x,b.png 2x , c.png", []string{"a.png", "b.png", "c.png"}},
		{"a.png,b.png", []string{"a.png,b.png"}}, // no space: one URL, as browsers read it
		{"a.png, b.png", []string{"a.png", "b.png"}},
		{"a.png,, b.png", []string{"a.png", "b.png"}},
		{"data:image/png;base64,iVBOR 1x, /b.png 2x", []string{"data:image/png;base64,iVBOR", "/b.png"}},
		{"a.png (min-width: 1px, max-width: 2px) 1x, b.png", []string{"a.png", "b.png"}},
		{"a.png 1x((,), b.png 2x", []string{"a.png", "b.png"}}, // parentheses do not nest
		{"", nil},
		{" , ,", nil},
	} {
		var got []string
		for _, s := range SrcsetURLs(tc.in) {
			got = append(got, tc.in[s[0]:s[1]])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("SrcsetURLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMayHaveTag(t *testing.T) {
	for in, want := range map[string]bool{
		`<html><BASE href=x>`: true,
		`<p>base</p><bas`:     false,
		`<svG>`:               true,
		`no tags at all`:      false,
		`a < base`:            false,
		`<mathematics>`:       true, // a false positive, as documented
		`<b>x</b><`:           false,
	} {
		if got := MayHaveTag([]byte(in), "base", "svg", "math"); got != want {
			t.Errorf("MayHaveTag(%q) = %v, want %v", in, got, want)
		}
	}
}
