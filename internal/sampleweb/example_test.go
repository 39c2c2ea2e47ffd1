package sampleweb_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/herod-archive/herod/internal/sampleweb"
)

// The default web: 3 hosts, 741 URLs reachable on day 0 (600 pages, their
// images, stylesheets and scripts, 404 links and redirects), and the new
// versions a daily crawl stores on the next days.
func ExampleWeb() {
	w := sampleweb.New(sampleweb.Config{})
	if err := w.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	fmt.Println(len(w.Seeds()), strings.HasPrefix(w.Seeds()[0], "http://127.0.0.2:"))
	for d := range 3 {
		fmt.Println(d, len(w.Reachable(d)), len(w.NewVersions(d)))
	}
	// Output:
	// 3 true
	// 0 741 741
	// 1 747 62
	// 2 753 68
}
