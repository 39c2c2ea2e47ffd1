package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// searchCmd asks a running node's gateway for a full-text search
// (GET /search?output=json) and prints the results: rank, title, URL,
// capture date, the archive's replay link and the snippet, or the JSON
// answer with --json.
func searchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("search", `search [--node URL] [--at DATE] [--site HOST] [--page N] [--cursor C] [--json] WORDS… ("a phrase", site:HOST)`, stderr)
	data := fs.String("data", defaultDataDir(), "data directory of the running node (its recorded gateway URL)")
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	at := fs.String("at", "", "search the pages as they were then: a date (2026-11-28) or a timestamp (20261128101500); default now")
	site := fs.String("site", "", "only pages of this host and its subdomains")
	page := fs.Int("page", 1, "page of results (10 a page)")
	cursor := fs.String("cursor", "", "resume after a previous answer's next cursor")
	asJSON := fs.Bool("json", false, "print the gateway's JSON answer")
	if err := parse(fs, args); err != nil {
		return err
	}
	q := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if q == "" {
		return fmt.Errorf("search: no words to search for")
	}
	base := nodeOf(fs, *nodeURL, *data)
	v := url.Values{"q": {q}, "output": {"json"}}
	if *at != "" {
		v.Set("at", *at)
	}
	if *site != "" {
		v.Set("site", *site)
	}
	if *page > 1 {
		v.Set("page", strconv.Itoa(*page))
	}
	if *cursor != "" {
		v.Set("cursor", *cursor)
	}
	ep, err := endpoint(base, "/search?"+v.Encode())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep, nil)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return unreachable(fmt.Errorf("search: %w", err), base, *data)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	var ans searchAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("search: %s: %s: not a search answer", ep, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("search: %s", ans.Error)
	}
	if *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	return printSearch(stdout, base, ans, *page)
}

// searchAnswer is the gateway's JSON answer (gateway.searchJSON).
type searchAnswer struct {
	Error   string `json:"error"`
	At      string `json:"at"`
	Matches int    `json:"matches"`
	Next    string `json:"next"`
	Results []struct {
		URL       string `json:"url"`
		Title     string `json:"title"`
		Timestamp string `json:"timestamp"`
		Replay    string `json:"replay"`
		Snippet   string `json:"snippet"`
	} `json:"results"`
}

// markTags are the <mark> tags of a snippet.
var markTags = regexp.MustCompile(`</?mark>`)

// printSearch writes the results for a terminal: the snippet as text,
// its marked words in brackets.
func printSearch(w io.Writer, base string, a searchAnswer, page int) error {
	if len(a.Results) == 0 {
		_, err := fmt.Fprintf(w, "no archived page holds every word (as of %s)\n", a.At)
		return err
	}
	fmt.Fprintf(w, "%d matching pages as of %s\n\n", a.Matches, a.At)
	for i, r := range a.Results {
		snippet := markTags.ReplaceAllStringFunc(r.Snippet, func(t string) string {
			if t == "<mark>" {
				return "["
			}
			return "]"
		})
		fmt.Fprintf(w, "%d. %s\n   %s  (captured %s)\n   %s\n   %s\n\n", (page-1)*10+i+1, r.Title, r.URL, r.Timestamp,
			strings.TrimSuffix(base, "/")+r.Replay, html.UnescapeString(snippet))
	}
	if a.Next != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", a.Next)
	}
	return nil
}
