package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herod-archive/herod/gateway"
)

// importCmd sends WARC, WACZ and ARC files to a running node, which
// imports their records into the ring (POST /api/import, the admin
// token). It prints each record not imported and a summary per file;
// it fails if a file could not be imported to its end (send it again:
// the node resumes) or held damaged records.
func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", "import [--data DIR] [--node URL] FILE…", stderr)
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	data := fs.String("data", defaultDataDir(), "the node's data directory, which holds its admin token ("+gateway.AdminTokenFile+") and its gateway URL ("+gateway.GatewayURLFile+")")
	if err := parse(fs, args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		return errors.New("import: name at least one WARC, WACZ or ARC file")
	}
	token, err := gateway.ReadAdminToken(*data)
	if err != nil {
		return fmt.Errorf("import: %w (pass the node's --data)", err)
	}
	base := nodeOf(fs, *nodeURL, *data)
	ep, err := endpoint(base, "/api/import")
	if err != nil {
		return err
	}
	var damaged, failed int
	for _, f := range files {
		n, err := importOne(ctx, ep, token, f, stdout)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "%s: %v\n", f, unreachable(err, base, *data))
			continue
		}
		damaged += n
	}
	switch {
	case failed > 0:
		return fmt.Errorf("import: %d of %d files not imported to their end (run the same command again: the node resumes each where it stopped)", failed, len(files))
	case damaged > 0:
		return fmt.Errorf("import: %d records not imported (listed above); the others are", damaged)
	}
	return nil
}

// importOne sends one file and prints what the node answers; it returns
// the records not imported.
func importOne(ctx context.Context, ep, token, path string, stdout io.Writer) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+"?name="+url.QueryEscape(filepath.Base(path)), f)
	if err != nil {
		return 0, err
	}
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	// An import takes as long as the file: no client timeout.
	resp, err := (&http.Client{Transport: httpClient.Transport}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	bad := 0
	for sc.Scan() {
		var l struct {
			gateway.ImportLine
			Report *importReport `json:"report"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return bad, fmt.Errorf("reply line %q: %w", sc.Bytes(), err)
		}
		switch {
		case l.Report != nil:
			r := l.Report
			fmt.Fprintf(stdout, "%s (sha256:%s): %d records read, %d stored, %d held already, %d skipped (not response, resource or revisit), %d damaged, %d refused",
				path, r.SHA256, r.Records, r.Added, r.Held, r.Skipped, r.Damaged, r.Refused)
			if r.Resumed > 0 {
				fmt.Fprintf(stdout, "; resumed after %d records", r.Resumed)
			}
			if el := time.Duration(r.Elapsed); el > 0 {
				fmt.Fprintf(stdout, "; %.1f s, %.0f records/s", el.Seconds(), float64(r.Records-r.Resumed)/el.Seconds())
			}
			fmt.Fprintln(stdout)
			return bad, nil
		case l.Where != "":
			bad++
			fmt.Fprintf(stdout, "%s: %s: record %s %s: %s\n", path, l.Where, l.ID, l.URL, l.Error)
		case l.Error != "":
			return bad, errors.New(l.Error)
		}
	}
	if err := sc.Err(); err != nil {
		return bad, err
	}
	return bad, errors.New("the node ended its answer before the report (is it still running?)")
}

// importReport is the part of the node's report (importer.Report) the
// command prints.
type importReport struct {
	SHA256  string `json:"sha256"`
	Records int    `json:"records"`
	Resumed int    `json:"resumed"`
	Added   int    `json:"added"`
	Held    int    `json:"held"`
	Skipped int    `json:"skipped"`
	Damaged int    `json:"damaged"`
	Refused int    `json:"refused"`
	Elapsed int64  `json:"elapsed_ns"`
}
