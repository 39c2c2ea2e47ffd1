package webrefs

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkHTML reads tricky.html as tokens (the path of documents
// without SVG or MathML) and as goquery's tree, and pages of 100 KiB and
// 1 MiB of links, styles and scripts: equal MB/s across sizes means
// linear time.
//
//	go test ./internal/webrefs -run - -bench BenchmarkHTML
func BenchmarkHTML(b *testing.B) {
	doc, err := os.ReadFile("testdata/tricky.html")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("tokens", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			tokenRefs(doc, "example.org")
		}
	})
	b.Run("tree", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			treeRefs(doc, "example.org")
		}
	})
	unit := `<a href="/a">a</a><img src="/i.png" srcset="/1.png 1x, /2.png 2x" style="background:url(/b.png)">` +
		`<script>import("./m.js"); x = "/img/x.png"; y = a / b; z = /re"/g;</script><style>@import "s.css";</style>`
	for _, n := range []int{100 << 10, 1 << 20} {
		big := []byte(strings.Repeat(unit, n/len(unit)))
		b.Run(fmt.Sprint("big/", len(big)>>10, "KiB"), func(b *testing.B) {
			b.SetBytes(int64(len(big)))
			for b.Loop() {
				HTML(big, "example.org")
			}
		})
	}
}
