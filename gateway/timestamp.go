package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TimestampLayout is the layout of a 14-digit Wayback timestamp, in UTC.
const TimestampLayout = "20060102150405"

// maxTimestampDigits is the longest timestamp accepted: 14 digits and up
// to three of milliseconds (as some archives write them, and as this
// gateway writes the timestamp of a capture that shares its second with
// another: VersionTimestamp).
const maxTimestampDigits = 17

// ErrTimestamp reports a malformed Wayback timestamp.
var ErrTimestamp = errors.New("gateway: malformed timestamp")

// FormatTimestamp returns t as a 14-digit Wayback timestamp in UTC.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// VersionTimestamp returns the timestamp that names version i of vs
// (versions oldest first) and no other: its 14 digits, or 17 (with its
// milliseconds) when a neighbour was captured in the same second. Read
// back with ParseTimestamp and given to selectVersion or Archive.Get, it
// selects version i, as long as no two versions share a millisecond.
func VersionTimestamp(vs []archive.Version, i int) string {
	t := vs[i].Time.UTC()
	sec := t.Truncate(time.Second)
	shared := (i > 0 && vs[i-1].Time.UTC().Truncate(time.Second).Equal(sec)) ||
		(i+1 < len(vs) && vs[i+1].Time.UTC().Truncate(time.Second).Equal(sec))
	if !shared {
		return FormatTimestamp(t)
	}
	return FormatTimestamp(t) + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// ParseTimestamp reads a Wayback timestamp of 1 to 17 digits and returns
// the latest instant of the period it names, to the nanosecond: a 14-digit
// timestamp names a whole second, so "20141226095010" is
// 2014-12-26 09:50:10.999999999 and selects the capture made during that
// second (captures carry sub-second times); digits 15 to 17 name tenths,
// hundredths and thousandths of it. It pads as pywb does: year and
// month digits missing from the first six are filled from "299912"; each
// later field (day, hour, minute, second) that is missing or incomplete
// takes its largest value. So "2014" is 2014-12-31 23:59:59.999999999 UTC,
// "201402" is 2014-02-28 23:59:59.999999999, "2014122609501" is
// 2014-12-26 09:50:59.999999999 and "20" is 2099-12-31 23:59:59.999999999.
// Out-of-range fields are clamped ("201413" is December, "20140231" is
// February 28).
func ParseTimestamp(ts string) (time.Time, error) {
	return parseTimestamp(ts, true)
}

// ParseTimestampFrom is ParseTimestamp padding to the earliest instant of
// the period instead ("2014" is 2014-01-01 00:00:00 UTC,
// "20141226095010" is 09:50:10.000), for lower bounds.
func ParseTimestampFrom(ts string) (time.Time, error) {
	return parseTimestamp(ts, false)
}

func parseTimestamp(ts string, up bool) (time.Time, error) {
	if ts == "" || len(ts) > maxTimestampDigits {
		return time.Time{}, fmt.Errorf("%w: %d digits", ErrTimestamp, len(ts))
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return time.Time{}, fmt.Errorf("%w: %q", ErrTimestamp, ts)
		}
	}
	frac := ""
	if len(ts) > 14 {
		ts, frac = ts[:14], ts[14:]
	}
	// As pywb: year and month are padded digit by digit; a later field
	// that is not complete is absent, and absent fields take the end (or
	// the start) of their range.
	pad6 := "100001"
	if up {
		pad6 = "299912"
	}
	if len(ts) < 6 {
		ts += pad6[len(ts):]
	}
	num := func(i int) int { return int(ts[i]-'0')*10 + int(ts[i+1]-'0') }
	field := func(i, lo, hi int) int {
		if len(ts) < i+2 {
			if up {
				return hi
			}
			return lo
		}
		return clamp(num(i), lo, hi)
	}
	year, month := num(0)*100+num(2), clamp(num(4), 1, 12)
	day := field(6, 1, daysIn(year, time.Month(month)))
	return time.Date(year, time.Month(month), day, field(8, 0, 23), field(10, 0, 59), field(12, 0, 59), fraction(frac, up), time.UTC), nil
}

// fraction returns the nanoseconds that the sub-second digits frac (0 to
// 3) name: their start, or, when up, the last nanosecond of the period
// they name (no digits: the whole second).
func fraction(frac string, up bool) int {
	n, unit := 0, int(time.Second)
	for i := 0; i < len(frac); i++ {
		unit /= 10
		n += int(frac[i]-'0') * unit
	}
	if up {
		n += unit - 1
	}
	return n
}

// EndOfSecond returns the last nanosecond of the second t falls in: an
// HTTP date (Accept-Datetime) names a whole second, as a 14-digit
// timestamp does.
func EndOfSecond(t time.Time) time.Time {
	return t.Truncate(time.Second).Add(time.Second - 1)
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// isTimestamp reports whether s is made of 1 to 17 digits.
func isTimestamp(s string) bool {
	if s == "" || len(s) > maxTimestampDigits {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
