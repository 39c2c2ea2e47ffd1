// Package archivetest builds archive stores for tests.
package archivetest

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TwoDays returns a store in a temporary directory (closed when the test
// ends) holding, for each URL, an HTML version at t0 and one a day later,
// each with its own body.
func TwoDays(t testing.TB, t0 time.Time, urls ...string) *archive.Store {
	t.Helper()
	s, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, u := range urls {
		for d := 0; d < 2; d++ {
			c := archive.Capture{
				URL: u, Time: t0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}},
				Body:   []byte(fmt.Sprintf("<p>%s on day %d</p>", u, d)),
			}
			if _, _, err := s.Put(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}
