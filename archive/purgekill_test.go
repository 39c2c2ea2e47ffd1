//go:build unix

package archive

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// purgeKillEnv makes the test binary a purging child (purgeKillChild)
// instead of running tests.
const purgeKillEnv = "HEROD_PURGE_KILL_DIR"

// killPurge is the URL purge TestPurgeURLsKill's child carries out.
var killPurge = URLPurge{ID: "k", SURT: "com,example)/private", Before: t0.Add(-time.Hour)}

// TestPurgeURLsKill runs PurgeURLs in a real process on a store of 120
// versions in 16 KiB segments and kills it with SIGKILL at a random
// moment: recording, the index group, a segment's rewrite, its rename.
// After the kill the store opens; if the purge was recorded, the
// covered captures are refused, and if not, every one is still there;
// PurgeURLs called again (as a node does at start) leaves none of them
// in the index or the segments and every other version readable, and
// Fsck finds the store consistent. 5 rounds; HEROD_KILL_ROUNDS sets
// more.
func TestPurgeURLsKill(t *testing.T) {
	if dir := os.Getenv(purgeKillEnv); dir != "" {
		purgeKillChild(dir)
		return
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("HEROD_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx := context.Background()
	o := Options{SegmentSize: 16 << 10, DictSamples: -1}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	outcome := map[string]int{}
	for round := range rounds {
		dir := t.TempDir()
		takedownStore(t, dir, o)
		cmd := exec.Command(os.Args[0], "-test.run=^TestPurgeURLsKill$")
		cmd.Env = append(os.Environ(), purgeKillEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "start" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the child did not start: %q", round, sc.Text())
		}
		time.Sleep(time.Duration(rng.IntN(60000)) * time.Microsecond)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		finished := sc.Scan() && sc.Text() == "done"
		cmd.Wait()

		s, err := Open(dir, o)
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		recorded := len(s.URLPurges()) == 1
		covered := 0
		for i := 1; i < 40; i += 2 {
			vs, err := s.Versions(ctx, fmt.Sprintf("http://example.com/private/%d", i))
			must(t, err)
			covered += len(vs)
		}
		switch {
		case !recorded && covered != 20:
			t.Fatalf("round %d: the purge was not recorded, yet %d of 20 covered versions are left", round, covered)
		case recorded:
			if _, _, err := s.Put(ctx, capture("http://example.com/private/new", t0.Add(-2*time.Hour), "x")); err == nil {
				t.Fatalf("round %d: the purge is recorded, yet a covered capture is taken", round)
			}
		}
		state := "before the record"
		switch {
		case finished:
			state = "done"
		case recorded && covered == 20:
			state = "recorded"
		case recorded:
			state = "index purged"
		}
		outcome[state]++
		if _, err := s.PurgeURLs(ctx, killPurge); err != nil {
			t.Fatalf("round %d (%s): purge again: %v", round, state, err)
		}
		for i := range 40 {
			for _, f := range []string{"http://example.com/private/%d", "http://www.example.com/public/%d", "http://example.org/private/%d"} {
				u := fmt.Sprintf(f, i)
				vs, err := s.Versions(ctx, u)
				must(t, err)
				gone := i%2 == 1 && strings.HasPrefix(f, "http://example.com/private/")
				if gone != (len(vs) == 0) {
					t.Fatalf("round %d (%s): %s has %d versions", round, state, u, len(vs))
				}
				if !gone {
					if _, err := s.Read(ctx, vs[0]); err != nil {
						t.Fatalf("round %d (%s): %s: %v", round, state, u, err)
					}
				}
			}
		}
		must(t, s.Close())
		text := segmentText(t, dir)
		for i := 1; i < 40; i += 2 {
			if strings.Contains(text, fmt.Sprintf("body of http://example.com/private/%d ", i)) {
				t.Fatalf("round %d (%s): page %d's bytes are still in the segments", round, state, i)
			}
		}
		if rep, err := Fsck(ctx, dir, o); err != nil || !rep.OK() {
			t.Fatalf("round %d (%s): fsck: %+v %v", round, state, rep, err)
		}
	}
	t.Logf("%d rounds killed: %v", rounds, outcome)
}

// purgeKillChild carries out killPurge on the store in dir, saying when
// it starts and when it is done.
func purgeKillChild(dir string) {
	s, err := Open(dir, Options{SegmentSize: 16 << 10, DictSamples: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("start")
	if _, err := s.PurgeURLs(context.Background(), killPurge); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("done")
	select {} // until killed
}
