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
	"sync"
	"syscall"
	"testing"
	"time"
)

// killChildEnv makes the test binary a writer child (killChild) instead
// of running tests.
const killChildEnv = "HEROD_KILL_CHILD_DIR"

// TestKillNine runs a real process that writes versions with 4 concurrent
// writers and prints each one once Put acknowledged it, kills it with
// SIGKILL at a random moment, and checks that every acknowledged version
// reads back after reopening and that Fsck finds the store consistent
// (every 10th round and the last); the same store is written and killed
// again each round. 3 rounds by
// default; HEROD_KILL_ROUNDS sets more (the long version: 200).
func TestKillNine(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
		return
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("HEROD_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := map[string]bool{}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillNine$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir, "HEROD_KILL_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements (0-60), so the
		// kill lands anywhere in a Put: encoding, appending, syncing,
		// committing.
		want := rng.IntN(61)
		sc := bufio.NewScanner(out)
		n := 0
		for n < want && sc.Scan() {
			acked[sc.Text()] = true
			n++
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() { // lines written before the kill were acknowledged too
			acked[sc.Text()] = true
		}
		cmd.Wait()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		ctx := context.Background()
		for u := range acked {
			if _, _, err := s.Get(ctx, u, time.Now()); err != nil {
				s.Close()
				t.Fatalf("round %d: acknowledged %s lost: %v", round, u, err)
			}
		}
		st := s.Stats()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st.URLs < int64(len(acked)) {
			t.Fatalf("round %d: %d URLs, %d acknowledged", round, st.URLs, len(acked))
		}
		if round%10 == 9 || round == rounds-1 { // a full scan: not every round
			rep, err := Fsck(ctx, dir, Options{})
			if err != nil || !rep.OK() {
				t.Fatalf("round %d: fsck after kill -9: %+v %v", round, rep, err)
			}
		}
	}
	gz, zst := segmentFiles(t, dir)
	t.Logf("%d rounds, %d versions acknowledged and found, %d .warc.gz and %d .warc.zst segments", rounds, len(acked), gz, zst)
}

// killChild writes distinct pages to the store in dir from 4 goroutines
// until killed, printing each URL once its Put returned.
func killChild(dir string) {
	// A dictionary from the 16th record on: kills land in its training,
	// in .warc.zst appends and in rolls that write its frame.
	s, err := Open(dir, Options{SegmentSize: 64 << 10, DictSamples: 16})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	round := os.Getenv("HEROD_KILL_ROUND")
	pages := benchPages(16)
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				c := benchCapture(i, pages[(i+g)%len(pages)], time.Now())
				c.URL = fmt.Sprintf("http://kill.example/r%s/g%d/%d", round, g, i)
				if _, _, err := s.Put(context.Background(), c); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintln(w, c.URL)
				w.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
