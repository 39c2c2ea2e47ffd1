package access

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkDecide measures one decision for a capture URL with no rules,
// with 10,000 rules in the index, and with the same rules scanned one by
// one (what the index saves), in one run:
//
//	go test -run '^$' -bench Decide -benchtime 200000x ./archive/access/
func BenchmarkDecide(b *testing.B) {
	now := time.Now()
	urls := make([]string, 1024)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://host%d.example.com/path%d/page/%d.html?q=%d", i%997, i*7, i, i)
	}
	for _, n := range []int{0, 10000} {
		s, _ := NewSet(rulesN(n))
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s.Decide(urls[i%len(urls)], now, now)
			}
		})
	}
	rules := rulesN(10000)
	keys := make([]string, len(rules))
	for i, r := range rules {
		keys[i], _ = r.Key()
	}
	b.Run("rules=10000/linear", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			k, _ := SURT(urls[i%len(urls)])
			best := -1
			for j, rk := range keys {
				if strings.HasPrefix(k, rk) && (best < 0 || len(rk) > len(keys[best])) {
					best = j
				}
			}
		}
	})
}
