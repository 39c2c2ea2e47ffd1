package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// writeTestWARC writes n response records of distinct URLs, one gzip
// member each, dated 2015, and returns the file's SHA-256.
func writeTestWARC(t *testing.T, path string, n int) string {
	t.Helper()
	var out bytes.Buffer
	d := func(b string) string {
		s := sha1.Sum([]byte(b))
		return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
	}
	for i := range n {
		body := fmt.Sprintf("<html><p>page %d of a collection from 2015</p>%s</html>", i, strings.Repeat("x", i%500))
		head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(body))
		block := head + body
		rec := fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:%08x-0000-4000-8000-000000000000>\r\n"+
			"WARC-Date: 2015-03-04T05:06:07Z\r\nWARC-Target-URI: http://collection.example/p%d\r\n"+
			"Content-Type: application/http; msgtype=response\r\nWARC-Block-Digest: %s\r\nWARC-Payload-Digest: %s\r\n"+
			"Content-Length: %d\r\n\r\n%s\r\n\r\n", i, i, d(block), d(body), len(block), block)
		zw := gzip.NewWriter(&out)
		zw.Write([]byte(rec))
		zw.Close()
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(out.Bytes())
	return hex.EncodeToString(s[:])
}

// membersUp waits until every node of nodes sees all of them up.
func membersUp(t *testing.T, nodes []*proc) {
	t.Helper()
	testwait.For(t, "every node seeing the ring", 2*time.Minute, func() bool {
		for _, p := range nodes {
			st, err := status(p)
			if err != nil {
				return false
			}
			var m struct {
				Up int `json:"up"`
			}
			if json.Unmarshal(st["members"], &m) != nil || m.Up < len(nodes) {
				return false
			}
		}
		return true
	})
}

// nodeVersions returns the versions p stores, -1 if it does not answer.
func nodeVersions(p *proc) int64 {
	st, err := status(p)
	if err != nil {
		return -1
	}
	var a struct {
		Versions int64 `json:"versions"`
	}
	if json.Unmarshal(st["archive"], &a) != nil {
		return -1
	}
	return a.Versions
}

// TestProcessImportKilled kills -9 the herod run process of a 3-node
// ring through which a WARC is being imported (herod import), restarts
// it and runs the same import again: the import resumes after the
// records settled before the kill, and every node (k = 3: each holds
// everything) ends with every record exactly once.
func TestProcessImportKilled(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("runs herod processes: set %s=1", processTestsEnv)
	}
	const records = 4000
	r := newProcRing(t, 24*time.Hour)
	warc := filepath.Join(r.dir, "collection.warc.gz")
	sum := writeTestWARC(t, warc, records)
	first := r.start(nil, "")
	p := r.start(nil, first.multiaddr) // the importing node
	third := r.start(nil, first.multiaddr)
	membersUp(t, []*proc{first, p, third})
	journal := filepath.Join(p.data, "import", "journal", sum+".json")
	imp := exec.Command(r.bin, "import", "--node", "http://"+p.gateway+"/", "--data", p.data, warc)
	var out bytes.Buffer
	imp.Stdout, imp.Stderr = &out, &out
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Done     int  `json:"done"`
		Complete bool `json:"complete"`
	}
	testwait.For(t, "the import under way", 2*time.Minute, func() bool {
		b, err := os.ReadFile(journal)
		return err == nil && json.Unmarshal(b, &j) == nil && j.Done > 0
	})
	r.stop(p, syscall.SIGKILL)
	if err := imp.Wait(); err == nil {
		t.Fatalf("herod import ended well with its node killed:\n%s", out.String())
	}
	b, _ := os.ReadFile(journal)
	json.Unmarshal(b, &j)
	if j.Complete || j.Done >= records {
		t.Fatalf("the import finished before the kill (journal %+v): make the file larger", j)
	}
	t.Logf("killed with %d of %d records settled", j.Done, records)

	r.remove(p, syscall.SIGKILL) // forgotten, to be started again on its data
	p = r.start(p, first.multiaddr)
	membersUp(t, []*proc{first, p, third})
	before := r.versions()
	var res []byte
	var err error
	for try := 1; ; try++ {
		again := exec.Command(r.bin, "import", "--node", "http://"+p.gateway+"/", "--data", p.data, warc)
		res, err = again.CombinedOutput()
		if err == nil {
			break
		}
		// A ring still settling after the restart stops the import, to be
		// run again (the journal keeps what is done).
		if try == 3 || !strings.Contains(string(res), "the ring is moving") {
			t.Fatalf("herod import again: %v\n%s", err, res)
		}
		t.Logf("import stopped while the ring settles, run again: %s", res)
	}
	t.Logf("%s", res)
	if !strings.Contains(string(res), "resumed after ") {
		t.Errorf("the second import did not resume after %d records: %s", j.Done, res)
	}
	nodes := []*proc{first, p, third}
	testwait.For(t, "every record on every node", 3*time.Minute, func() bool {
		for _, q := range nodes {
			if v := nodeVersions(q); v < records {
				return false
			}
		}
		return true
	})
	for _, q := range nodes {
		if v := nodeVersions(q); v != records {
			t.Errorf("%s stores %d versions (the ring %d before the second run), want %d: a record stored twice", q.listen, v, before, records)
		}
	}
}
