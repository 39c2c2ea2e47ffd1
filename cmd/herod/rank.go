package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node/rank"
)

// rankCmd runs PageRank across the ring on the running node (POST
// /api/rank with the admin token), which coordinates the run, and prints
// its summary; with --url it prints one URL's rank instead.
func rankCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rank", "rank [--data DIR] [--node URL] [--day YYYYMMDD] [--json] | rank --url URL [--day YYYYMMDD]", stderr)
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	data := fs.String("data", defaultDataDir(), "the node's data directory, which holds its admin token ("+gateway.AdminTokenFile+")")
	day := fs.String("day", "", "crawl day to rank (the newest version of each page that day), as a timestamp: YYYYMMDD; default today")
	one := fs.String("url", "", "print this URL's rank from the newest run at or before --day instead of running")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	if *day != "" {
		if _, err := gateway.ParseTimestampFrom(*day); err != nil {
			return fmt.Errorf("--day %q: %w", *day, err)
		}
	}
	base := nodeOf(fs, *nodeURL, *data)
	if *one != "" {
		q := url.Values{"url": {*one}}
		if *day != "" {
			q.Set("at", *day)
		}
		b, err := getJSON(ctx, base, "/api/rank?"+q.Encode(), "")
		if err != nil {
			return unreachable(err, base, *data)
		}
		var rk gateway.RankAnswer
		if err := json.Unmarshal(b, &rk); err != nil {
			return fmt.Errorf("rank: reply: %w", err)
		}
		fmt.Fprintf(stdout, "%s\t%.6g\t(day %s, run %s)\n", rk.URL, rk.Rank, rk.Day.Format(time.DateOnly), rk.Run)
		return nil
	}
	token, err := gateway.ReadAdminToken(*data)
	if err != nil {
		return fmt.Errorf("%w (start the node once, or pass its --data)", err)
	}
	path := "/api/rank"
	if *day != "" {
		path += "?day=" + url.QueryEscape(*day)
	}
	ep, err := endpoint(base, path)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// A run reads every member's pages: no client timeout.
	resp, err := (&http.Client{Transport: httpClient.Transport}).Do(req)
	if err != nil {
		return unreachable(err, base, *data)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("rank: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("rank: %s: %s", resp.Status, body)
	}
	if *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	var s rank.Summary
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("rank: reply: %w", err)
	}
	fmt.Fprintf(stdout, "run %s, day %d: %d members, %d pages and targets, %d links\n", s.Run, s.Day, s.Members, s.Vertices, s.Edges)
	fmt.Fprintf(stdout, "%d iterations (last L1 change %.2g), %v per iteration, %.1f bytes on the wire per link and iteration, %v in all\n",
		s.Iterations, s.Delta, s.PerIteration.Round(time.Microsecond), s.PerEdge, s.Took.Round(time.Millisecond))
	return nil
}
