package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/identity"
)

// takedownRoundsEnv sets how many takedowns TestProcessesTakedown gives,
// one after the other, each for a prefix of its own (default 3).
const takedownRoundsEnv = "HEROD_TAKEDOWN_ROUNDS"

// takedownHold bounds the time a takedown may take to hold on every node
// (issue 36's acceptance).
const takedownHold = 60 * time.Second

// takedownSite is the test site: /tK/0-4 for each takedown K, /public/0-9,
// and an index linking them all. Each page's body holds a marker,
// "herod-page:PATH;", that no other page holds.
type takedownSite struct {
	*httptest.Server
	rounds int
}

func newTakedownSite(t *testing.T, rounds int) *takedownSite {
	s := &takedownSite{rounds: rounds}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>")
			for _, p := range s.paths() {
				fmt.Fprintf(w, "<a href=%q>%s</a>\n", p, p)
			}
			fmt.Fprint(w, "</body></html>")
		case slices.Contains(s.paths(), r.URL.Path):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body><p>herod-page:%s;</p><a href=\"/\">home</a></body></html>", r.URL.Path)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// paths returns the site's page paths, the index aside.
func (s *takedownSite) paths() []string {
	var out []string
	for k := range s.rounds {
		for i := range 5 {
			out = append(out, fmt.Sprintf("/t%d/%d", k, i))
		}
	}
	for i := range 10 {
		out = append(out, fmt.Sprintf("/public/%d", i))
	}
	return out
}

// urls returns the URLs of the pages under prefix (a path, "" for all).
func (s *takedownSite) urls(prefix string) []string {
	var out []string
	for _, p := range s.paths() {
		if strings.HasPrefix(p, prefix) {
			out = append(out, s.URL+p)
		}
	}
	return out
}

func marker(u string) string {
	p, _ := url.Parse(u)
	return "herod-page:" + p.Path + ";"
}

// diskHolding returns the markers of urls found in the records of the
// segments under dir (gzip members: a store this small trains no zstd
// dictionary).
func diskHolding(t *testing.T, dir string, urls []string) []string {
	t.Helper()
	var raw bytes.Buffer
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if err != nil && os.IsNotExist(err) {
				return nil // a file a compaction renamed meanwhile
			}
			return err
		}
		if strings.HasSuffix(p, ".warc.zst") {
			return fmt.Errorf("%s: a zstd segment in a store this small", p)
		}
		if !strings.HasSuffix(p, ".warc.gz") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		// A segment being appended to may end in a record not yet whole.
		io.Copy(&raw, zr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, u := range urls {
		if bytes.Contains(raw.Bytes(), []byte(marker(u))) {
			held = append(held, u)
		}
	}
	return held
}

// get fetches u (bounded by probeClient) and returns its status and body;
// status 0 if the request failed.
func get(u string) (int, string) {
	resp, err := probeClient.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// statusOf reads a field of a node's /api/status into v.
func statusOf(t *testing.T, p *proc, field string, v any) bool {
	st, err := status(p)
	if err != nil {
		return false
	}
	return json.Unmarshal(st[field], v) == nil
}

// hiddenOn reports whether node p keeps u from readers on its cheapest
// surfaces: TimeMap, id_ replay and the CDX rows of u.
func hiddenOn(p *proc, replay, u string) bool {
	ts := time.Now().UTC().Format("20060102150405")
	if code, _ := get("http://" + p.gateway + "/timemap/link/" + u); code != http.StatusNotFound {
		return false
	}
	if code, body := get(replay + "web/" + ts + "id_/" + u); code == 0 || code == http.StatusOK || strings.Contains(body, marker(u)) {
		return false
	}
	code, body := get("http://" + p.gateway + "/cdx?url=" + url.QueryEscape(u))
	return code == http.StatusOK && !strings.Contains(body, u)
}

// exportText returns the decompressed text of a ring-wide export of the
// site from p: the .warc.gz, or every entry of the WACZ.
func exportText(p *proc, site, format string) (string, error) {
	q := "prefix=" + url.QueryEscape(site+"/")
	if format != "" {
		q += "&format=" + format
	}
	code, body := get("http://" + p.gateway + "/export?" + q)
	if code != http.StatusOK {
		return "", fmt.Errorf("export %s: %d %.200s", format, code, body)
	}
	gunzip := func(b []byte) (string, error) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return "", err
		}
		out, err := io.ReadAll(zr)
		return string(out), err
	}
	if format != "wacz" {
		return gunzip([]byte(body))
	}
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		return "", fmt.Errorf("wacz: %w", err)
	}
	var all strings.Builder
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return "", err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return "", err
		}
		if strings.HasSuffix(f.Name, ".gz") {
			text, err := gunzip(b)
			if err != nil {
				return "", fmt.Errorf("wacz %s: %w", f.Name, err)
			}
			b = []byte(text)
		}
		all.Write(b)
	}
	return all.String(), nil
}

// surfaces checks that node p keeps every URL of hidden from readers —
// replay, id_, calendar, TimeMap, CDX, export, WACZ — and serves every
// URL of shown on them. It returns what it found wrong with each: a
// hidden URL shown is a failure at once; a shown URL not served may be
// the ring settling (a restart, a join) and is asked again.
func surfaces(p *proc, site string, hidden, shown []string) (leaks, missing []string) {
	var replay string
	if st, err := status(p); err != nil || json.Unmarshal(st["replay"], &replay) != nil || replay == "" {
		return nil, []string{"no replay origin in its status"}
	}
	ts := time.Now().UTC().Format("20060102150405")
	for _, u := range hidden {
		for what, addr := range map[string]string{
			"replay": replay + "web/" + ts + "/" + u, "id_": replay + "web/" + ts + "id_/" + u,
			"calendar": "http://" + p.gateway + "/web/*/" + u, "TimeMap": "http://" + p.gateway + "/timemap/link/" + u,
		} {
			if code, body := get(addr); code == http.StatusOK || strings.Contains(body, marker(u)) {
				leaks = append(leaks, fmt.Sprintf("%s of %s: %d", what, u, code))
			}
		}
	}
	for _, u := range shown {
		for what, addr := range map[string]string{
			"replay": replay + "web/" + ts + "/" + u, "id_": replay + "web/" + ts + "id_/" + u,
		} {
			if code, body := get(addr); code != http.StatusOK || !strings.Contains(body, marker(u)) {
				missing = append(missing, fmt.Sprintf("%s of %s: %d", what, u, code))
			}
		}
		for what, addr := range map[string]string{
			"calendar": "http://" + p.gateway + "/web/*/" + u, "TimeMap": "http://" + p.gateway + "/timemap/link/" + u,
		} {
			if code, _ := get(addr); code != http.StatusOK {
				missing = append(missing, fmt.Sprintf("%s of %s: %d", what, u, code))
			}
		}
	}
	texts := map[string]string{}
	code, cdx := get("http://" + p.gateway + "/cdx?matchType=prefix&url=" + url.QueryEscape(site+"/"))
	if code != http.StatusOK {
		missing = append(missing, fmt.Sprintf("cdx: %d %.200s", code, cdx))
	} else {
		texts["cdx"] = cdx
	}
	for _, format := range []string{"", "wacz"} {
		text, err := exportText(p, site, format)
		if err != nil {
			missing = append(missing, err.Error())
			continue
		}
		texts["export "+format] = text
	}
	for name, text := range texts {
		for _, u := range hidden {
			if strings.Contains(text, u+" ") || strings.Contains(text, u+"\"") || strings.Contains(text, u+"\r") || strings.Contains(text, marker(u)) {
				leaks = append(leaks, fmt.Sprintf("%s holds %s", name, u))
			}
		}
		for _, u := range shown {
			if !strings.Contains(text, u) {
				missing = append(missing, fmt.Sprintf("%s lacks %s", name, u))
			}
		}
	}
	return leaks, missing
}

// checkSurfaces runs surfaces on p until nothing shown is missing
// (within a minute): a leak fails the test at once.
func checkSurfaces(t *testing.T, p *proc, site string, hidden, shown []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		leaks, missing := surfaces(p, site, hidden, shown)
		if len(leaks) > 0 {
			t.Fatalf("%s shows taken-down captures: %v", p.listen, firstFew(leaks))
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve captures outside the takedowns: %v", p.listen, firstFew(missing))
		}
		time.Sleep(time.Second)
	}
}

// purgeStats is the part of a node's status this test reads.
type purgeStats struct {
	Rules   int   `json:"rules"`
	Refused int64 `json:"refused"`
}

// TestProcessesTakedown is issue 36's acceptance with the built binary:
// five herod run processes crawl a site this test serves; a purge
// authority's takedown of a SURT prefix (herod access add --ring --surt
// --action purge, given to the authority's node) is enforced by every
// node within 60 s on replay, id_, calendar, TimeMap, CDX, export and
// WACZ, for that prefix only, and its captures' bytes leave every
// holder's disk; several takedowns in turn give the time to hold (median,
// max). Then an order signed by a member that is no authority is refused
// and counted by the others, a restarted node still holds the takedowns
// and refuses an unsigned order found in its orders file (the others
// refuse it too when it reaches them), and a node that joins afterwards
// holds them and receives none of the purged captures. Run with
// HEROD_PROCESS_TESTS=1 (about three minutes; HEROD_TAKEDOWN_ROUNDS=N
// for N takedowns).
func TestProcessesTakedown(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("runs herod processes for minutes: set %s=1", processTestsEnv)
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv(takedownRoundsEnv)); err == nil && n > 0 {
		rounds = n
	}
	site := newTakedownSite(t, rounds)
	r := newProcRing(t, 24*time.Hour) // no new day during the test

	// The authority is node 1: its key is made before it starts.
	authDir := filepath.Join(r.dir, "node1")
	if err := os.MkdirAll(authDir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := identity.LoadKey(authDir)
	if err != nil {
		t.Fatal(err)
	}
	authID, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	r.extra = []string{"--purge-authority", authID.String()}
	first := r.start(nil, "")
	nodes := []*proc{first}
	for range 4 {
		nodes = append(nodes, r.start(nil, first.multiaddr))
	}
	seed := exec.Command(r.bin, "seed", "--node", "http://"+first.gateway+"/", "--data", first.data, site.URL+"/")
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	all := site.urls("")
	testwait.For(t, "the crawl listed on every node", 3*time.Minute, func() bool {
		for _, p := range nodes {
			if got := listedURLs(p, all); len(got) != len(all) {
				return false
			}
		}
		return true
	})
	// Every page of a takedown is on two disks at least: there are
	// replicas to purge.
	testwait.For(t, "replicas on disk", 2*time.Minute, func() bool {
		count := map[string]int{}
		for _, p := range nodes {
			for _, u := range diskHolding(t, p.data, all) {
				count[u]++
			}
		}
		for _, u := range site.urls("/t") {
			if count[u] < 2 {
				return false
			}
		}
		return true
	})
	replay := map[*proc]string{}
	for _, p := range nodes {
		var a string
		statusOf(t, p, "replay", &a)
		replay[p] = a
	}

	var held, gone []time.Duration // per node and takedown; per takedown
	var hidden []string
	for k := range rounds {
		prefix := fmt.Sprintf("/t%d/", k)
		surt, err := access.SURT(site.URL + prefix)
		if err != nil {
			t.Fatal(err)
		}
		urls := site.urls(prefix)
		start := time.Now()
		if code, stderr := runOnce(t, r.bin, "access", "add", "--ring", "--surt", "--action", "purge", "--reason", "takedown "+prefix,
			"--node", "http://"+first.gateway+"/", "--data", first.data, surt); code != 0 {
			t.Fatalf("herod access add: exit %d\n%s", code, stderr)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !hiddenOn(p, replay[p], urls[0]) {
					if time.Since(start) > takedownHold {
						t.Errorf("takedown %s: not held on %s after %s", prefix, p.listen, takedownHold)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				held = append(held, time.Since(start))
				mu.Unlock()
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		hidden = append(hidden, urls...)
		shown := slices.DeleteFunc(slices.Clone(all), func(u string) bool { return slices.Contains(hidden, u) })
		for _, p := range nodes {
			checkSurfaces(t, p, site.URL, hidden, shown)
		}
		testwait.For(t, "the purged bytes gone from every disk", takedownHold, func() bool {
			for _, p := range nodes {
				if len(diskHolding(t, p.data, urls)) > 0 {
					return false
				}
			}
			return true
		})
		gone = append(gone, time.Since(start))
		for _, p := range nodes {
			if len(diskHolding(t, p.data, all)) == 0 {
				t.Fatalf("%s holds nothing at all after takedown %s", p.listen, prefix)
			}
		}
		t.Logf("takedown %s: held on 5 nodes, gone from every disk %s after it was given", prefix, gone[len(gone)-1].Round(time.Millisecond))
	}
	slices.Sort(held)
	slices.Sort(gone)
	t.Logf("takedown held on every node: median %s, max %s over %d takedowns × 5 nodes; bytes gone from every holder: median %s, max %s",
		held[len(held)/2].Round(time.Millisecond), held[len(held)-1].Round(time.Millisecond), rounds,
		gone[len(gone)/2].Round(time.Millisecond), gone[len(gone)-1].Round(time.Millisecond))
	shown := site.urls("/public/")

	// An order signed by a member that is no authority: in force on that
	// member alone, refused and counted by the 4 others.
	elsewhere, _ := access.SURT(site.URL + "/elsewhere/")
	if code, stderr := runOnce(t, r.bin, "access", "add", "--ring", "--surt", "--action", "exclude",
		"--node", "http://"+nodes[1].gateway+"/", "--data", nodes[1].data, elsewhere); code != 0 {
		t.Fatalf("herod access add on a member: exit %d\n%s", code, stderr)
	}
	refused := func(p *proc) int64 {
		var ps purgeStats
		statusOf(t, p, "purge", &ps)
		return ps.Refused
	}
	start := time.Now()
	testwait.For(t, "the member's order refused by every other node", takedownHold, func() bool {
		for i, p := range nodes {
			if i != 1 && refused(p) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("a member's order refused by the 4 others within %s", time.Since(start).Round(time.Millisecond))
	for i, p := range nodes {
		var ps purgeStats
		statusOf(t, p, "purge", &ps)
		if want := rounds + map[bool]int{true: 1}[i == 1]; ps.Rules != want {
			t.Errorf("%s: %d ring-wide rules in force, want %d", p.listen, ps.Rules, want)
		}
	}

	// A node restarts with an unsigned order, forged as the authority's,
	// in its orders file: the takedowns still hold there, and the others
	// refuse the forged order.
	victim := nodes[2]
	r.remove(victim, syscall.SIGTERM)
	forgedKey, _ := access.SURT(site.URL + "/forged/")
	forged, _ := json.Marshal(map[string]any{"peer": "", "issuer": authID.String(), "time": time.Now().UTC(),
		"access": access.Rule{SURT: forgedKey, Action: access.Exclude}, "done": true})
	f, err := os.OpenFile(filepath.Join(victim.data, "purge-orders"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(forged, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := map[*proc]int64{}
	for _, p := range nodes {
		before[p] = refused(p)
	}
	nodes[2] = r.start(victim, first.multiaddr)
	checkSurfaces(t, nodes[2], site.URL, hidden, shown)
	if held := diskHolding(t, nodes[2].data, hidden); len(held) > 0 {
		t.Fatalf("the restarted node holds %d taken-down pages on disk", len(held))
	}
	testwait.For(t, "the forged order refused by another node", takedownHold, func() bool {
		for i, p := range nodes {
			if i != 2 && refused(p) > before[p] {
				return true
			}
		}
		return false
	})

	// A node that joins afterwards holds the takedowns and receives none
	// of their captures.
	late := r.start(nil, first.multiaddr)
	start = time.Now()
	testwait.For(t, "the takedowns on the late node", takedownHold, func() bool {
		var ps purgeStats
		return statusOf(t, late, "purge", &ps) && ps.Rules >= rounds
	})
	t.Logf("the late node holds the %d takedowns %s after it started", rounds, time.Since(start).Round(time.Millisecond))
	testwait.For(t, "replicas on the late node", 2*time.Minute, func() bool { return len(diskHolding(t, late.data, shown)) > 0 })
	checkSurfaces(t, late, site.URL, hidden, shown)
	if held := diskHolding(t, late.data, hidden); len(held) > 0 {
		t.Fatalf("the late node received %d taken-down pages", len(held))
	}
}
