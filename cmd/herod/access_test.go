package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/gateway/gatewaytest"
)

// fileAccess is a node's local access rules without the ring: a rules
// file feeding a table.
type fileAccess struct {
	*access.Table
	file *access.File
}

func (a fileAccess) Add(_ context.Context, r access.Rule, _ bool) error { return a.file.Add(r) }
func (a fileAccess) Remove(_ context.Context, id string, _ bool) (int, error) {
	return a.file.Remove(id)
}

// TestAccessCmd: herod access add, list, check and remove against a
// gateway's admin API, the rule written to the rules file and enforced
// on replay.
func TestAccessCmd(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	token, err := gateway.LoadAdminToken(data)
	if err != nil {
		t.Fatal(err)
	}
	mem := gatewaytest.NewMem()
	for _, u := range []string{"http://example.com/private/a", "http://example.com/public"} {
		if err := mem.Add(ctx, &archive.Capture{URL: u, Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("body of " + u)}); err != nil {
			t.Fatal(err)
		}
	}
	tab := access.NewTable(nil)
	path := filepath.Join(data, "access-rules")
	f, err := access.OpenFile(path, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Archive: mem, UIOrigin: "http://ui.test", ContentOrigin: "http://content.test",
		AdminToken: token, Access: fileAccess{tab, f}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := accessCmd(ctx, append(args[:1:1], append([]string{"--node", srv.URL, "--data", data}, args[1:]...)...), &out, &errOut); err != nil {
			t.Fatalf("herod access %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
	replay := func(u string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/web/20261101000000id_/"+u, nil)
		req.Host = "content.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if replay("http://example.com/private/a") != 200 {
		t.Fatal("replay before any rule")
	}
	if out := run("add", "--action", "block", "--reason", "privacy request", "http://example.com/private/"); !strings.Contains(out, "added rule") {
		t.Fatalf("add: %s", out)
	}
	if replay("http://example.com/private/a") != 451 || replay("http://example.com/public") != 200 {
		t.Fatal("the rule added is not enforced on that prefix only")
	}
	if rules, err := access.Parse(mustRead(t, path)); err != nil || len(rules) != 1 || rules[0].Reason != "privacy request" {
		t.Fatalf("rules file: %+v, %v", rules, err)
	}
	if out := run("list"); !strings.Contains(out, "block") || !strings.Contains(out, "http://example.com/private/*") {
		t.Fatalf("list:\n%s", out)
	}
	if out := run("check", "http://example.com/private/a"); !strings.Contains(out, "com,example)/private/a") || strings.Count(out, "451") != 2 {
		t.Fatalf("check:\n%s", out)
	}
	if out := run("remove", "http://example.com/private/"); !strings.Contains(out, "removed 1 rule") {
		t.Fatalf("remove: %s", out)
	}
	if replay("http://example.com/private/a") != 200 {
		t.Fatal("the rule removed still holds")
	}
	var out, errOut bytes.Buffer
	if err := accessCmd(ctx, []string{"add", "--node", srv.URL, "--data", data, "--action", "hide", "http://example.com/"}, &out, &errOut); err == nil {
		t.Fatal("a rule with an unknown action was sent")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExportDataAccess: herod export from a stopped node's data
// directory leaves out what its access rules do not show: its rules
// file's and the ring-wide rules its purge book keeps.
func TestExportDataAccess(t *testing.T) {
	data := makeData(t)
	rules := `{"url":"http://a.example/x","action":"exclude"}` + "\n" +
		`{"url":"http://a.example/","exact":true,"action":"block","before":"2026-03-02T00:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(data, "access-rules"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "a.warc.gz")
	if msg, err := run(t, exportCmd, "--data", data, "-o", out, "--host", "a.example"); err != nil {
		t.Fatalf("export: %v\n%s", err, msg)
	}
	recs := records(t, mustRead(t, out))
	got := strings.Join(recs, "\n")
	if len(recs) != 3 || strings.Contains(got, "a.example/x") || strings.Contains(got, "http://a.example/ 2026-03-01") {
		t.Fatalf("exported %d records (6 without rules):\n%s", len(recs), got)
	}
	if err := os.WriteFile(filepath.Join(data, "access-rules"), []byte(`{"url":"http://a.example/","action":"hide"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, exportCmd, "--data", data, "-o", out, "--host", "a.example"); err == nil {
		t.Fatal("an export ran with a rules file that does not parse")
	}
}
