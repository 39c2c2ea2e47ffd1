package webrefs

import (
	"strings"
	"testing"
)

// TestScanLocation: the document's location is found where a script
// names it, not as a property name, an object key, in a string, a
// comment or a regular expression.
func TestScanLocation(t *testing.T) {
	for in, want := range map[string][]string{
		`location.pathname`: {"location"},
		`window.location.href; document.location; self.location`:    {"window.location", "document.location", "self.location"},
		`a.location; a.window.location; x?.location; top.location`:  nil,
		`o = {location: 1, b: 2}; o = {a: 1, location: 2}`:          nil,
		`"location"; 'location'; // location` + "\n" + `/location/`: nil,
		"`${location.hash}`": {"location"},
		`class A { get location() {} static location() {} }`: nil,
		`let location = 1; f(location)`:                      {"location", "location"},
		`x = a ? location : b`:                               {"location"},
	} {
		var got []string
		ScanLocation([]byte(in), func(sp Span) { got = append(got, in[sp.Start:sp.End]) })
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("ScanLocation(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzScanLocation: the spans are in order, within the script, and end
// with the identifier location.
func FuzzScanLocation(f *testing.F) {
	for _, s := range []string{`location.pathname`, `window.location = "/x"`, "`${location}`", `a.location`, `{location: 1}`, `/location/.test(location)`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		last := 0
		ScanLocation(js, func(sp Span) {
			if sp.Start < last || sp.End > len(js) || sp.Start >= sp.End || !strings.HasSuffix(string(js[sp.Start:sp.End]), "location") {
				t.Fatalf("%q: span %v after %d", js, sp, last)
			}
			last = sp.End
		})
	})
}
