package canon

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// idnaProfile is the WHATWG URL Standard's "domain to ASCII" with beStrict
// false: UTS #46 ToASCII with CheckHyphens=false, CheckBidi=true,
// CheckJoiners=true, UseSTD3ASCIIRules=false, Transitional_Processing=false
// and VerifyDnsLength=false. idna.Lookup is not it: Lookup applies the STD3
// rules (refusing "a_b.example") and checks hyphens (refusing
// "r3---sn-x.example"), which browsers accept. MapForLookup switches STD3
// and hyphen checks on, so the options after it switch them off again.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
	idna.VerifyDNSLength(false),
)

// appendHostPort appends the canonical host and port of hp, an authority
// without its user information, for a URL of scheme.
func appendHostPort(b []byte, scheme, hp string) ([]byte, error) {
	host, port, hasPort := hp, "", false
	inBrackets := false
scan:
	for i := 0; i < len(hp); i++ {
		switch hp[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				host, port, hasPort = hp[:i], hp[i+1:], true
				break scan
			}
		}
	}
	if host == "" {
		return nil, ErrNoHost
	}
	b, err := appendHost(b, host)
	if err != nil {
		return nil, err
	}
	if !hasPort || port == "" {
		return b, nil
	}
	n, err := parsePort(port)
	if err != nil {
		return nil, err
	}
	if (n == 80 && scheme == "http") || (n == 443 && scheme == "https") {
		return b, nil
	}
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(n), 10), nil
}

// parsePort parses the decimal port p, which must lie in 1..65535.
func parsePort(p string) (int, error) {
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, fmt.Errorf("%w: %q", ErrBadPort, p)
		}
	}
	digits := strings.TrimLeft(p, "0")
	if digits == "" || len(digits) > 5 {
		return 0, fmt.Errorf("%w: %q", ErrBadPort, p)
	}
	n, _ := strconv.Atoi(digits)
	if n > 65535 {
		return 0, fmt.Errorf("%w: %q", ErrBadPort, p)
	}
	return n, nil
}

// appendHost appends the canonical form of host (not empty): a bracketed
// IPv6 address, a dotted-decimal IPv4 address, or an ASCII domain in lower
// case without trailing dots.
func appendHost(b []byte, host string) ([]byte, error) {
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return nil, fmt.Errorf("%w: %q: unclosed IPv6 address", ErrBadHost, host)
		}
		a, ok := parseIPv6(host[1 : len(host)-1])
		if !ok {
			return nil, fmt.Errorf("%w: %q: malformed IPv6 address", ErrBadHost, host)
		}
		return appendIPv6(b, a), nil
	}
	d, err := domainToASCII(percentDecode(host))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadHost, host, err)
	}
	d = strings.TrimRight(d, ".")
	if d == "" {
		return nil, ErrNoHost
	}
	if endsInNumber(d) {
		a, ok := parseIPv4(d)
		if !ok {
			return nil, fmt.Errorf("%w: %q: malformed IPv4 address", ErrBadHost, host)
		}
		return appendIPv4(b, a), nil
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; c == '`' || c == '{' || c == '}' {
			return nil, fmt.Errorf("%w: %q: %q is valid in a URL but not in a Go net/url host", ErrBadHost, host, c)
		}
	}
	return append(b, d...), nil
}

// domainToASCII is the WHATWG "domain to ASCII" of the percent-decoded
// host d with beStrict false, and its check for forbidden code points.
func domainToASCII(d string) (string, error) {
	if isASCII(d) && !hasACELabel(d) {
		d = strings.ToLower(d) // the standard's shortcut: UTS #46 does no more here
	} else {
		if !utf8.ValidString(d) {
			return "", errors.New("not UTF-8")
		}
		a, err := idnaProfile.ToASCII(d)
		if err != nil {
			return "", fmt.Errorf("domain to ASCII: %w", err)
		}
		d = a
	}
	if d == "" {
		return "", errors.New("empty domain")
	}
	for i := 0; i < len(d); i++ {
		if forbiddenInDomain[d[i]] {
			return "", fmt.Errorf("forbidden code point %q", d[i])
		}
	}
	return d, nil
}

// forbiddenInDomain holds the forbidden domain code points of the WHATWG
// URL Standard, all ASCII, and the non-ASCII bytes (ToASCII's output is
// ASCII).
var forbiddenInDomain = func() (set byteSet) {
	for c := range set {
		set[c] = c <= ' ' || c >= 0x7f || strings.IndexByte(`#/:<>?@[\]^|%`, byte(c)) >= 0
	}
	return set
}()

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasACELabel reports whether a label of the domain d starts with "xn--"
// in any case.
func hasACELabel(d string) bool {
	for i := 0; i+4 <= len(d); i++ {
		if (i == 0 || d[i-1] == '.') && (d[i] == 'x' || d[i] == 'X') && (d[i+1] == 'n' || d[i+1] == 'N') && d[i+2] == '-' && d[i+3] == '-' {
			return true
		}
	}
	return false
}

// percentDecode decodes the valid percent escapes of s and keeps any other
// '%' as it is, as the WHATWG URL Standard's "percent-decode" does.
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}
