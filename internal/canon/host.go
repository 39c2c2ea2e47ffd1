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

// endsInNumber is the WHATWG "ends in a number checker": whether the last
// label of d (after a trailing dot) is a decimal number or an IPv4 number.
func endsInNumber(d string) bool {
	d = strings.TrimSuffix(d, ".")
	last := d[strings.LastIndexByte(d, '.')+1:]
	if last == "" {
		return false
	}
	digits := true
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			digits = false
			break
		}
	}
	if digits {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 is the WHATWG IPv4 parser: one to four numbers, each decimal,
// octal (a leading "0") or hexadecimal (a leading "0x"), the last filling
// the bytes the others leave.
func parseIPv4(d string) (uint32, bool) {
	d = strings.TrimSuffix(d, ".")
	var nums [4]uint64
	n := 0
	for part := range strings.SplitSeq(d, ".") {
		if n == 4 {
			return 0, false
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return 0, false
		}
		nums[n] = v
		n++
	}
	for _, v := range nums[:n-1] {
		if v > 255 {
			return 0, false
		}
	}
	if nums[n-1] >= 1<<(8*(5-n)) {
		return 0, false
	}
	a := nums[n-1]
	for i, v := range nums[:n-1] {
		a += v << (8 * (3 - i))
	}
	return uint32(a), true
}

// parseIPv4Number parses one part of an IPv4 address. Values that do not
// fit 33 bits are clamped to 1<<33: too large either way.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, base = s[2:], 16
	} else if len(s) >= 2 && s[0] == '0' {
		s, base = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case base == 16 && isHex(c):
			d = uint64(unhex(c))
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = min(v*base+d, 1<<33)
	}
	return v, true
}

func appendIPv4(b []byte, a uint32) []byte {
	for i := 3; i >= 0; i-- {
		b = strconv.AppendUint(b, uint64(a>>(8*i)&0xff), 10)
		if i > 0 {
			b = append(b, '.')
		}
	}
	return b
}

// parseIPv6 is the WHATWG IPv6 parser for the text between the brackets.
func parseIPv6(s string) ([8]uint16, bool) {
	var a [8]uint16
	piece, compress, p := 0, -1, 0
	at := func(i int) int { // the byte at i, or -1 past the end
		if i < len(s) {
			return int(s[i])
		}
		return -1
	}
	if at(0) == ':' {
		if at(1) != ':' {
			return a, false
		}
		p = 2
		piece++
		compress = piece
	}
	for at(p) != -1 {
		if piece == 8 {
			return a, false
		}
		if at(p) == ':' {
			if compress != -1 {
				return a, false
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && at(p) != -1 && isHex(byte(at(p))) {
			value = value<<4 | int(unhex(byte(at(p))))
			p++
			length++
		}
		if at(p) == '.' {
			if length == 0 {
				return a, false
			}
			p -= length
			if piece > 6 {
				return a, false
			}
			seen := 0
			for at(p) != -1 {
				v := -1
				if seen > 0 {
					if at(p) != '.' || seen >= 4 {
						return a, false
					}
					p++
				}
				if c := at(p); c < '0' || c > '9' {
					return a, false
				}
				for c := at(p); c >= '0' && c <= '9'; c = at(p) {
					switch {
					case v == -1:
						v = c - '0'
					case v == 0:
						return a, false
					default:
						v = v*10 + c - '0'
					}
					if v > 255 {
						return a, false
					}
					p++
				}
				a[piece] = a[piece]<<8 | uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return a, false
			}
			break
		} else if at(p) == ':' {
			p++
			if at(p) == -1 {
				return a, false
			}
		} else if at(p) != -1 {
			return a, false
		}
		a[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return a, false
	}
	return a, true
}

// appendIPv6 appends the WHATWG serialization of a in brackets: lower-case
// hexadecimal pieces, the first longest run of two or more zero pieces
// written "::".
func appendIPv6(b []byte, a [8]uint16) []byte {
	start, length := -1, 1
	for i := 0; i < 8; {
		if a[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > length {
			start, length = i, j-i
		}
		i = j
	}
	b = append(b, '[')
	for i := 0; i < 8; i++ {
		if i == start {
			if i == 0 {
				b = append(b, ':')
			}
			b = append(b, ':')
			i += length - 1
			continue
		}
		b = strconv.AppendUint(b, uint64(a[i]), 16)
		if i < 7 {
			b = append(b, ':')
		}
	}
	return append(b, ']')
}
