package canon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// This file checks Canonical and Resolve against independent
// implementations of the WHATWG URL Standard: github.com/nlnwa/whatwg-url
// (Go, always) and Node's URL class (when node is installed). Their output
// is brought into canonical form by sameAsCanonical, which applies the
// differences doc.go documents and nothing else, so any other disagreement
// is a bug here or there.

// identityCase is one case of testdata/identity.json.
type identityCase struct {
	Input     string  `json:"input"`
	Base      string  `json:"base,omitempty"` // "" for an absolute URL
	Canonical *string `json:"canonical"`      // nil: refused
	Why       string  `json:"why,omitempty"`
}

func loadIdentityCases(t *testing.T) []identityCase {
	t.Helper()
	data, err := os.ReadFile("testdata/identity.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []identityCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("testdata/identity.json: %v", err)
	}
	return cases
}

// ours returns what this package makes of input, resolved against base
// unless base is "".
func ours(input, base string) (string, error) {
	if base == "" {
		return Canonical(input)
	}
	b, err := Parse(base)
	if err != nil {
		return "", fmt.Errorf("base: %w", err)
	}
	return Resolve(b, input)
}

// nlnwa returns the WHATWG href (without fragment) of input resolved
// against base by github.com/nlnwa/whatwg-url, in canonical form.
func nlnwa(input, base string) (string, error) {
	var u *whatwg.Url
	var err error
	if base == "" {
		u, err = whatwg.Parse(input)
	} else {
		u, err = whatwg.ParseRef(base, input)
	}
	if err != nil {
		if m := std3Rune.FindStringSubmatch(err.Error()); m != nil {
			if r, _ := strconv.ParseUint(m[1], 16, 8); !forbiddenInDomain[byte(r)] {
				return "", fmt.Errorf("%w: %v", errSTD3, err)
			}
		}
		return "", err
	}
	return sameAsCanonical(u.Href(true), func(host string) (string, error) {
		v, err := whatwg.Parse("http://" + host + "/")
		if err != nil {
			return "", err
		}
		return v.Hostname(), nil
	})
}

// whatwg-url applies the STD3 rules (UseSTD3ASCIIRules=true) to domains
// that are not all ASCII, so it refuses "ü!.example", which the standard
// (beStrict false) and browsers accept. errSTD3 marks such a refusal: the
// fuzz test asks node instead.
var (
	errSTD3  = errors.New("whatwg-url applies STD3 rules")
	std3Rune = regexp.MustCompile(`disallowed rune U\+00([0-7][0-9A-F])`)
)

// Bytes that canonical paths and queries hold literally (doc.go), spelled
// out again here rather than taken from escape.go.
const (
	unreservedBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	pathBytes       = unreservedBytes + "!$&'()*+,;=:@[]/"
	queryBytes      = unreservedBytes + "!$&()*+,;=:@[]/?"
)

// sameAsCanonical turns href, a WHATWG serialization without fragment,
// into this package's canonical form by the documented differences: only
// http and https; no user information; trailing dots of a domain dropped
// (the rest parsed again by reparse, as it may now be an IPv4 address);
// port 0 and hosts with '`', '{' or '}' refused; percent-encoding of path
// and query normalized as RFC 3986 section 6.2.2.2 says; at most MaxLen
// bytes.
func sameAsCanonical(href string, reparse func(host string) (string, error)) (string, error) {
	scheme, rest, _ := strings.Cut(href, "://")
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("scheme %q", scheme)
	}
	auth, pathQuery := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		auth, pathQuery = rest[:i], rest[i:]
	}
	auth = auth[strings.LastIndexByte(auth, '@')+1:]
	host, port := auth, ""
	if i := strings.LastIndexByte(auth, ':'); i >= 0 && !strings.HasSuffix(auth, "]") {
		host, port = auth[:i], auth[i+1:]
	}
	if port == "0" {
		return "", fmt.Errorf("port 0")
	}
	if !strings.HasPrefix(host, "[") && strings.HasSuffix(host, ".") {
		host = strings.TrimRight(host, ".")
		if host == "" {
			return "", fmt.Errorf("host of dots")
		}
		h, err := reparse(host)
		if err != nil {
			return "", err
		}
		host = h
	}
	if strings.ContainsAny(host, "`{}") {
		return "", fmt.Errorf("host %q", host)
	}
	path, query, hasQuery := strings.Cut(pathQuery, "?")
	s := scheme + "://" + host
	if port != "" {
		s += ":" + port
	}
	s += rfc3986(path, pathBytes)
	if hasQuery {
		s += "?" + rfc3986(query, queryBytes)
	}
	if len(s) > MaxLen {
		return "", fmt.Errorf("%d bytes", len(s))
	}
	return s, nil
}

// rfc3986 normalizes the percent-encoding of s: unreserved escapes
// decoded, other escapes in upper case, bytes not in literal encoded.
func rfc3986(s, literal string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				if strings.IndexByte(unreservedBytes, byte(v)) >= 0 {
					b.WriteByte(byte(v))
				} else {
					b.WriteString(strings.ToUpper(s[i : i+3]))
				}
				i += 2
				continue
			}
		}
		if strings.IndexByte(literal, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// compare reports how ours and the reference's results differ, or "".
func compare(got string, gotErr error, want string, wantErr error) string {
	switch {
	case gotErr != nil && wantErr != nil:
		return ""
	case gotErr != nil:
		return fmt.Sprintf("refused (%v), standard gives %q", gotErr, want)
	case wantErr != nil:
		return fmt.Sprintf("%q, standard refuses (%v)", got, wantErr)
	case got != want:
		return fmt.Sprintf("%q, standard gives %q", got, want)
	}
	return ""
}

func TestIdentityCases(t *testing.T) {
	for _, c := range loadIdentityCases(t) {
		got, err := ours(c.Input, c.Base)
		switch {
		case c.Canonical == nil && err == nil:
			t.Errorf("%q (base %q) = %q, want refused (%s)", c.Input, c.Base, got, c.Why)
		case c.Canonical != nil && err != nil:
			t.Errorf("%q (base %q): %v, want %q (%s)", c.Input, c.Base, err, *c.Canonical, c.Why)
		case c.Canonical != nil && got != *c.Canonical:
			t.Errorf("%q (base %q) = %q, want %q (%s)", c.Input, c.Base, got, *c.Canonical, c.Why)
		}
		if err == nil {
			if again, err := Canonical(got); again != got {
				t.Errorf("not idempotent: %q -> %q (%v)", got, again, err)
			}
		}
		ref, refErr := nlnwa(c.Input, c.Base)
		if d := compare(got, err, ref, refErr); d != "" {
			t.Errorf("%q (base %q): whatwg-url: %s", c.Input, c.Base, d)
		}
	}
}

// nodeScript reads [input, base] pairs as JSON on stdin and writes, for
// each, the href without fragment of new URL(input, base), or null.
const nodeScript = `
let data = '';
process.stdin.on('data', d => data += d);
process.stdin.on('end', () => {
  const out = JSON.parse(data).map(([input, base]) => {
    try {
      const u = base === '' ? new URL(input) : new URL(input, base);
      u.hash = '';
      let href = u.href;
      if (href.endsWith('#')) href = href.slice(0, -1);
      return href;
    } catch (e) {
      return null;
    }
  });
  process.stdout.write(JSON.stringify(out));
});
`

// node runs the pairs through Node's WHATWG URL class and returns the
// results in canonical form. It skips the test when node is not installed.
func node(t *testing.T, pairs [][2]string) []refResult {
	t.Helper()
	hrefs := nodeHrefs(t, pairs)
	out := make([]refResult, len(pairs))
	for i, h := range hrefs {
		if h == nil {
			out[i].err = errors.New("node refuses it")
			continue
		}
		out[i].s, out[i].err = sameAsCanonical(*h, func(host string) (string, error) {
			v := nodeHrefs(t, [][2]string{{"http://" + host + "/", ""}})[0]
			if v == nil {
				return "", fmt.Errorf("node refuses host %q", host)
			}
			h, _, _ := strings.Cut(strings.TrimPrefix(*v, "http://"), "/")
			return h, nil
		})
	}
	return out
}

// refResult is a reference's result in canonical form, or its refusal.
type refResult struct {
	s   string
	err error
}

// nodeHrefs returns what node's new URL(input, base) gives for each pair:
// its href without fragment, or nil.
func nodeHrefs(t *testing.T, pairs [][2]string) []*string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	in, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-e", nodeScript)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var hrefs []*string
	if err := json.Unmarshal(out, &hrefs); err != nil || len(hrefs) != len(pairs) {
		t.Fatalf("node output %.200q: %v", out, err)
	}
	return hrefs
}

// TestIdentityCasesNode checks testdata/identity.json against Node's URL
// class (V8's implementation, ICU's IDNA), a second reference written
// independently of whatwg-url and of golang.org/x/net/idna.
func TestIdentityCasesNode(t *testing.T) {
	cases := loadIdentityCases(t)
	pairs := make([][2]string, len(cases))
	for i, c := range cases {
		pairs[i] = [2]string{c.Input, c.Base}
	}
	for i, r := range node(t, pairs) {
		c := cases[i]
		got, err := ours(c.Input, c.Base)
		if d := compare(got, err, r.s, r.err); d != "" {
			t.Errorf("%q (base %q): node: %s", c.Input, c.Base, d)
		}
	}
}

// maxCompared bounds the inputs FuzzCanonical compares with the references:
// whatwg-url takes time quadratic in the length (0.5 ms for 1.5 kB), which
// makes the fuzzer's minimizing of long inputs crawl.
const maxCompared = 512

// fuzzBase is the base FuzzCanonical resolves its input against.
const fuzzBase = "http://a.example/b/c.html?q"

// FuzzCanonical checks, for any input: Canonical is idempotent; Parse and
// ResolveURL agree with net/url about their own output; and, for inputs of
// valid UTF-8 and at most maxCompared bytes, the result is what the WHATWG
// URL Standard gives, up to the documented differences, for the input as
// an absolute URL and as a link in a page at fuzzBase.
//
// The standard's word is github.com/nlnwa/whatwg-url's; where it
// disagrees with this package, node decides when it is installed (so the
// known bugs of whatwg-url below do not fail the test, and any other
// disagreement fails it only if node agrees with whatwg-url). Without node
// the known bugs skip the input and any other disagreement fails the test.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"http://example.com/a/../b", "HTTPS://X:443/?q#f", "http://[::1]:8/", "http://a/%zz",
		"http://0?\xad #", "http://../", "http://a/%2e%2E/b", "http://bücher.de/a%2Fb//c",
		"http://0x7f.1/", "../x?y", `\\h\p`, "http:p", "//h:0080", "?", "#", "",
	} {
		f.Add(s)
	}
	base, err := Parse(fuzzBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(s)
		if err == nil {
			checkCanonical(t, c)
		}
		r, rerr := Resolve(base, s)
		if rerr == nil {
			checkCanonical(t, r)
			if u, s2, err := ResolveURL(base, s); err != nil || s2 != r || u.String() != r {
				t.Fatalf("ResolveURL(%q) = %v, %q, %v; Resolve %q", s, u, s2, err, r)
			}
		}
		if !utf8.ValidString(s) || len(s) > maxCompared {
			return // the standard parses code points: no reference to ask
		}
		checkStandard(t, "Canonical", s, "", c, err)
		checkStandard(t, "Resolve", s, fuzzBase, r, rerr)
	})
}

// checkStandard compares got, what this package made of input (resolved
// against base), with the references, as FuzzCanonical says.
func checkStandard(t *testing.T, fn, input, base, got string, gotErr error) {
	t.Helper()
	want, wantErr := nlnwa(input, base)
	d := compare(got, gotErr, want, wantErr)
	if d == "" {
		return
	}
	if _, err := exec.LookPath("node"); err != nil {
		if whatwgURLBug(input, wantErr) {
			t.Skipf("%s(%q): whatwg-url: %s; a known whatwg-url bug, and no node to decide", fn, input, d)
		}
		t.Fatalf("%s(%q, base %q) = %s", fn, input, base, d)
	}
	n := node(t, [][2]string{{input, base}})[0]
	if dn := compare(got, gotErr, n.s, n.err); dn != "" {
		t.Fatalf("%s(%q, base %q): whatwg-url: %s; node: %s", fn, input, base, d, dn)
	}
}

// whatwgURLBug reports whether whatwg-url may be wrong about input: it
// applies the STD3 rules to non-ASCII domains (errSTD3), and it parses the
// numbers of IPv4 addresses with strconv.ParseInt, which accepts a sign
// ("http://+0/" is a domain, not 0.0.0.0).
func whatwgURLBug(input string, err error) bool {
	return errors.Is(err, errSTD3) || strings.ContainsAny(input, "+-")
}

// checkCanonical checks that c, a canonical form, is its own canonical form
// and parses with net/url to a URL that Parse returns too.
func checkCanonical(t *testing.T, c string) {
	t.Helper()
	again, err := Canonical(c)
	if err != nil || again != c {
		t.Fatalf("not idempotent: %q -> %q, %v", c, again, err)
	}
	u, err := Parse(c)
	if err != nil || u.String() != c {
		t.Fatalf("Parse(%q) = %v, %v", c, u, err)
	}
	p, err := url.Parse(c)
	if err != nil {
		t.Fatalf("net/url refuses canonical %q: %v", c, err)
	}
	if p.String() != c || p.Host != u.Host || p.Path != u.Path || p.RawQuery != u.RawQuery || p.EscapedPath() != u.EscapedPath() {
		t.Fatalf("canonical %q: net/url gives %#v, Parse %#v", c, p, u)
	}
}
