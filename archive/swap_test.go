package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestReindexSwapCrash crashes Reindex's index swap before each of its
// renames: the next Open completes or undoes the swap, the store holds
// every version and the crawl states, and Fsck finds it consistent.
func TestReindexSwapCrash(t *testing.T) {
	ctx := context.Background()
	for crashAt := 1; crashAt <= 3; crashAt++ {
		t.Run(fmt.Sprintf("rename%d", crashAt), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{NoSync: true})
			must(t, err)
			populate(t, s)
			want := s.Stats()
			must(t, s.Close())
			n := 0
			swapRename = func(from, to string) error {
				if n++; n == crashAt {
					return errors.New("crash")
				}
				return os.Rename(from, to)
			}
			_, err = Reindex(ctx, dir, Options{})
			swapRename = os.Rename
			if err == nil {
				t.Fatal("reindex survived its crash")
			}
			s, err = Open(dir, Options{})
			must(t, err)
			if got := s.Stats(); got.Versions != want.Versions || got.URLs != want.URLs || got.Bytes != want.Bytes {
				t.Fatalf("after the crash: %+v, want %+v", got, want)
			}
			if st, err := s.State(ctx, "http://h0.example/p/0"); err != nil || st.ETag != "0" {
				t.Fatalf("crawl state lost: %+v %v", st, err)
			}
			must(t, s.Close())
			for _, name := range []string{indexNew, indexReady, indexOld} {
				if exists(dir + "/" + name) {
					t.Fatalf("%s left after Open", name)
				}
			}
			if rep, err := Fsck(ctx, dir, Options{}); err != nil || !rep.OK() {
				t.Fatalf("fsck: %+v %v", rep, err)
			}
		})
	}
}
