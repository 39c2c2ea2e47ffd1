package anchortext

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"  a \n\t b  ":              "a b",
		"":                          "",
		"\x00x\x01":                 "x",
		strings.Repeat("é", MaxLen): strings.Repeat("é", MaxLen/2),
		"bad \xff utf8":             "bad \uFFFD utf8",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOf(t *testing.T) {
	base, _ := url.Parse("http://a.test/x/")
	got := Of(base, []byte(`<a href="y">one<a href="/z">two</a> <a href="y">again</a><a href="mailto:m@x">m</a><area href="/w" alt=" W ">`))
	want := map[string]string{"http://a.test/x/y": "one", "http://a.test/z": "two", "http://a.test/w": "W"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Of = %v, want %v", got, want)
	}
}

func FuzzOf(f *testing.F) {
	f.Add([]byte(`<base href="/q/"><a href="x">t<img alt=i></a><area href=y alt=z>`))
	base, _ := url.Parse("http://a.test/")
	f.Fuzz(func(t *testing.T, b []byte) {
		for u, a := range Of(base, b) {
			if a != Normalize(a) || len(a) > MaxLen || !strings.HasPrefix(u, "http") {
				t.Fatalf("bad anchor %q → %q", u, a)
			}
		}
	})
}
