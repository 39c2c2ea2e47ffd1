package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestDiskFullPauses: with the file system at the reserve, Put, Import,
// SetState and Touch write nothing and return ErrDiskFull; the store does
// not fail, DiskFull says so, and every write succeeds again once space
// returns, with every version acknowledged before still readable.
func TestDiskFullPauses(t *testing.T) {
	ctx := context.Background()
	var free atomic.Int64
	free.Store(1 << 30)
	s := openTest(t, Options{DiskReserve: 1 << 20, freeSpace: func(string) (int64, error) { return free.Load(), nil }})
	before, _ := mustPut(t, s, capture("http://example.org/a", t0, "first"))

	src := openTest(t, Options{})
	other, _ := mustPut(t, src, capture("http://example.org/b", t0, "replica's"))
	data, err := src.ReadFile(ctx, other.Entry())
	if err != nil {
		t.Fatal(err)
	}

	free.Store(1<<20 - 1) // below the reserve, as another program fills the disk
	s.disk.checked = time.Time{}
	if !s.DiskFull() {
		t.Fatal("DiskFull false at the reserve")
	}
	if _, _, err := s.Put(ctx, capture("http://example.org/a", t0.Add(time.Hour), "second")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Put on a full disk: %v, want ErrDiskFull", err)
	}
	if _, _, err := s.Import(ctx, other.Entry().Name(), data); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Import on a full disk: %v, want ErrDiskFull", err)
	}
	if err := s.SetState(ctx, "http://example.org/a", CrawlState{ETag: `"e"`}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("SetState on a full disk: %v, want ErrDiskFull", err)
	}
	if err := s.Touch(ctx, "http://example.org/a", t0.Add(2*time.Hour)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Touch on a full disk: %v, want ErrDiskFull", err)
	}
	st := s.Stats()
	if st.Failed != "" || !st.DiskFull || st.DiskRefused != 4 || st.Versions != 1 {
		t.Fatalf("stats on a full disk: %+v", st)
	}

	free.Store(1 << 30) // space returns
	if _, added, err := s.Put(ctx, capture("http://example.org/a", t0.Add(time.Hour), "second")); err != nil || !added {
		t.Fatalf("Put once space returned: added %v, %v", added, err)
	}
	if _, added, err := s.Import(ctx, other.Entry().Name(), data); err != nil || !added {
		t.Fatalf("Import once space returned: added %v, %v", added, err)
	}
	if s.DiskFull() || s.Stats().DiskFull {
		t.Fatal("still full once space returned")
	}
	if _, c, err := s.Get(ctx, before.URL, before.Time); err != nil || string(c.Body) != "first" {
		t.Fatalf("the version acknowledged before: %v", err)
	}
}

// TestDiskFullTmpfs: on a real, small file system (tmpfs) that fills up,
// the store refuses writes at its reserve without failing, keeps every
// acknowledged version, and writes again once a file is removed. Needs
// root to mount tmpfs; skips otherwise.
func TestDiskFullTmpfs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "herod-test", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	ctx := context.Background()
	s, err := Open(filepath.Join(dir, "archive"), Options{DiskReserve: 2 << 20, DictSamples: -1, SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Incompressible pages, so that gzip cannot shrink them.
	page := func(i int) string {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		b := make([]byte, 64<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return string(b)
	}
	var acked []Version
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		v, _, err := s.Put(ctx, capture(fmt.Sprintf("http://example.org/p%d", i), t0, page(i)))
		if err != nil {
			full = err
			break
		}
		acked = append(acked, v)
	}
	if !errors.Is(full, ErrDiskFull) {
		t.Fatalf("filling a 16 MiB tmpfs: %v after %d versions, want ErrDiskFull", full, len(acked))
	}
	if st := s.Stats(); st.Failed != "" || !s.DiskFull() {
		t.Fatalf("after the disk filled: failed %q, DiskFull %v", st.Failed, s.DiskFull())
	}
	// Space returns: the operator grows the file system (a tmpfs
	// resizes in place).
	if out, err := exec.Command("mount", "-o", "remount,size=32m", dir).CombinedOutput(); err != nil {
		t.Fatalf("resize the tmpfs: %v: %s", err, out)
	}
	testwait.For(t, "the store to see the space returned", 10*time.Second, func() error {
		if s.DiskFull() {
			return errors.New("still full 10 s after the file system grew")
		}
		return nil
	})
	if _, added, err := s.Put(ctx, capture("http://example.org/after", t0, page(5000))); err != nil || !added {
		t.Fatalf("Put once space returned: %v", err)
	}
	for _, v := range acked {
		if _, c, err := s.Get(ctx, v.URL, v.Time); err != nil || c.Digest != v.Digest && len(c.Body) == 0 {
			t.Fatalf("acknowledged %s lost: %v", v.URL, err)
		}
	}
}
