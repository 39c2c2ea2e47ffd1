package node

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/herod-archive/herod"

// wiresGateway are the packages under node/ that may depend on the HTTP
// package gateway: node itself, which builds the gateway and asserts that
// its services implement the gateway's interfaces. (node/status carries
// the gateway's counters as internal/gwstats.Stats.)
var wiresGateway = []string{"node"}

// TestNodeServicesBelowGateway: no package under node/ but those of
// wiresGateway depends, directly or through other packages of the module,
// on the gateway; the query model they share with it lives below it
// (archive/cdx, internal/ringview). Test files are not counted.
func TestNodeServicesBelowGateway(t *testing.T) {
	root := filepath.Dir(mustAbs(t, "."))
	imports := func(dir string) []string {
		fset := token.NewFileSet()
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, n), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, is := range f.Imports {
				p, _ := strconv.Unquote(is.Path.Value)
				if rel, ok := strings.CutPrefix(p, module+"/"); ok {
					out = append(out, rel)
				}
			}
		}
		return out
	}
	// via returns the chain of module packages by which dir reaches the
	// gateway, nil if it does not.
	memo := map[string][]string{}
	var via func(dir string) []string
	via = func(dir string) []string {
		if c, ok := memo[dir]; ok {
			return c
		}
		memo[dir] = nil // a cycle does not compile; this only stops the walk
		for _, p := range imports(dir) {
			if p == "gateway" {
				memo[dir] = []string{dir, p}
				break
			}
			if c := via(p); c != nil {
				memo[dir] = append([]string{dir}, c...)
				break
			}
		}
		return memo[dir]
	}
	checked := 0
	err := filepath.WalkDir(filepath.Join(root, "node"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		dir, _ := filepath.Rel(root, path)
		dir = filepath.ToSlash(dir)
		if slices.Contains(wiresGateway, dir) {
			return nil
		}
		checked++
		if c := via(dir); c != nil {
			t.Errorf("%s depends on the gateway: %s", dir, strings.Join(c, " → "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 || via("node") == nil {
		t.Fatalf("checked %d packages under node/, node reaches the gateway by %v: the walk is broken", checked, via("node"))
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
