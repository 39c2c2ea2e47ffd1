package canon

import (
	"strconv"
	"strings"
)

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
