package render

import (
	"testing"
)

func FuzzParseRules(f *testing.F) {
	for _, s := range []string{"com,example)/app/\n", "# c\nhttps://example.com/x\n\n", "not a rule", "com,a)/\ncom,a)/b\ncom,b)\n", "http://[::1]:80/\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRules([]byte(s))
		if err != nil {
			return
		}
		for _, u := range []string{"https://example.com/app/x", "http://a/", "https://www.b.example:8080/?q=1"} {
			r.Match(u)
		}
		for _, p := range r.prefixes {
			if p == "" {
				t.Fatalf("an empty prefix from %q", s)
			}
		}
	})
}

func FuzzMeasure(f *testing.F) {
	for _, s := range []string{"<p>text</p><script>x=1</script>", "<script src=a.js type=module>", "<noscript><p>x</noscript>", "<style>p{}</style>\xff\xfe", "<template><script>1</script></template>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := Measure([]byte(s))
		if w.Text > len(s) || w.Inline > len(s) || w.Text < 0 || w.Inline < 0 || w.Scripts < 0 {
			t.Fatalf("Measure(%q) = %+v", s, w)
		}
	})
}
