package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// accessCmd edits and checks a running node's access rules through its
// admin API (POST /api/access, gateway/accessadmin.go): add, list,
// remove, check. Local rules go to the node's rules file; --ring makes
// them orders this node signs, carried out by every node that lists it
// as a purge authority.
func accessCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "access add|list|remove|check [flags] [URL|SURT|ID]"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "Usage: herod %s\n\n"+
			"  add URL      add a rule (--action block|exclude|allow|purge; --surt for a SURT prefix)\n"+
			"  list         the rules in force, local and ring-wide\n"+
			"  remove X     remove the rules of an ID, URL or SURT prefix\n"+
			"  check URL    what readers get of URL, now and for each version held\n", synopsis)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return errUsage
	}
	op := args[0]
	fs := newFlagSet("access "+op, synopsis, stderr)
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	data := fs.String("data", defaultDataDir(), "the node's data directory, which holds its admin token")
	ring := fs.Bool("ring", false, "add or remove ring-wide: an order this node signs (nodes listing it with --purge-authority carry it out)")
	asJSON := fs.Bool("json", false, "print the node's JSON reply")
	var r access.Rule
	var surt, exact bool
	var action, before, after, embargo, at string
	switch op {
	case "add":
		fs.StringVar(&action, "action", "block", "allow, block (kept, shown as 451/403), exclude (kept, never shown nor listed) or purge (removed from the disk: this node's, with --ring every node's)")
		fs.IntVar(&r.Status, "status", 0, "status of a blocked capture: 451 (default) or 403")
		fs.BoolVar(&exact, "exact", false, "the URL only, not every URL it is a prefix of")
		fs.BoolVar(&surt, "surt", false, "the argument is a SURT prefix (com,example)/path), as the CDX API's surtkey")
		fs.StringVar(&before, "before", "", "only captures before this time (YYYY[MMDDhhmmss] or YYYY-MM-DD)")
		fs.StringVar(&after, "after", "", "only captures at or after this time")
		fs.StringVar(&embargo, "embargo", "", "only captures newer than this period (30d, 2w, 1y)")
		fs.StringVar(&r.Reason, "reason", "", "why, shown to readers of a blocked capture")
	case "check":
		fs.StringVar(&at, "at", "", "also decide for a capture made at this time (default: now)")
	case "list", "remove":
	default:
		fmt.Fprintf(stderr, "herod access: unknown operation %q (add, list, remove, check)\n", op)
		return errUsage
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	want := 1
	if op == "list" {
		want = 0
	}
	if fs.NArg() != want {
		fs.Usage()
		return errUsage
	}
	req := gateway.AccessRequest{Op: op, Ring: *ring}
	switch op {
	case "add":
		r.Action, r.Exact = access.Action(action), exact
		if surt {
			r.SURT = fs.Arg(0)
		} else {
			r.URL = fs.Arg(0)
		}
		var err error
		if r.Before, err = parseWhen(before); err != nil {
			return fmt.Errorf("--before: %w", err)
		}
		if r.After, err = parseWhen(after); err != nil {
			return fmt.Errorf("--after: %w", err)
		}
		if r.Embargo, err = access.ParsePeriod(embargo); err != nil {
			return fmt.Errorf("--embargo: %w", err)
		}
		if err := r.Validate(); err != nil {
			return err
		}
		req.Rule = &r
	case "remove":
		req.ID = fs.Arg(0)
	case "check":
		req.URL = fs.Arg(0)
		t, err := parseWhen(at)
		if err != nil {
			return fmt.Errorf("--at: %w", err)
		}
		req.Time = t
	}
	token, err := gateway.ReadAdminToken(*data)
	if err != nil {
		return fmt.Errorf("%w (start the node once, or pass its --data)", err)
	}
	base := nodeOf(fs, *nodeURL, *data)
	body, err := postAccess(ctx, base, *data, token, req)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	var rep gateway.AccessReply
	if err := json.Unmarshal(body, &rep); err != nil {
		return fmt.Errorf("access: reply: %w", err)
	}
	return printAccess(stdout, op, req, rep)
}

// diskHide returns the access rules of the stopped node in data as an
// export's Hide (the captures they do not show), nil when it has none.
func diskHide(data string) (func(url string, t time.Time) bool, error) {
	set, err := node.DiskAccessRules(data, "")
	if err != nil || set.Len() == 0 {
		return nil, err
	}
	now := time.Now()
	return func(url string, t time.Time) bool { return !set.Decide(url, t, now).Shown() }, nil
}

// postAccess sends req to the node's /api/access and returns its reply.
func postAccess(ctx context.Context, base, data, token string, req gateway.AccessRequest) ([]byte, error) {
	ep, err := endpoint(base, "/api/access")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(hr)
	if err != nil {
		return nil, unreachable(err, base, data)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", ep, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", ep, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// parseWhen reads a time flag: a 14-digit timestamp or a prefix of one
// (the start of that period), or YYYY-MM-DD; "" is zero.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return gateway.ParseTimestampFrom(s)
}

// printAccess prints a reply for a reader.
func printAccess(w io.Writer, op string, req gateway.AccessRequest, rep gateway.AccessReply) error {
	where := "this node's rules file"
	if req.Ring {
		where = "ring-wide (an order this node signed)"
	}
	switch op {
	case "add":
		_, err := fmt.Fprintf(w, "added rule %s, %s\n", rep.ID, where)
		return err
	case "remove":
		_, err := fmt.Fprintf(w, "removed %d rule(s), %s\n", rep.Removed, where)
		return err
	case "list":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSOURCE\tACTION\tCOVERS\tCAPTURES\tSINCE\tREASON")
		for _, l := range rep.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Source, actionOf(l.Rule), covers(l.Rule), window(l.Rule), day(l.Date), l.Reason)
		}
		return tw.Flush()
	}
	fmt.Fprintf(w, "%s (SURT %s)\n", req.URL, rep.SURT)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(label string, c gateway.AccessCheck) {
		by := "no rule"
		if c.Rule != nil {
			by = "rule " + c.Rule.ID() + " (" + covers(*c.Rule) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", label, c.Action, c.Status, by)
	}
	if rep.Decision != nil {
		line("captured "+rep.Decision.Time.UTC().Format("2006-01-02 15:04"), *rep.Decision)
	}
	for _, v := range rep.Versions {
		line("version "+v.Time.UTC().Format("2006-01-02 15:04:05"), v)
	}
	return tw.Flush()
}

func actionOf(r access.Rule) string {
	if r.Action == access.Block && r.Status == 403 {
		return "block 403"
	}
	return string(r.Action)
}

func covers(r access.Rule) string {
	switch {
	case r.SURT != "":
		return r.SURT + "*"
	case r.Exact:
		return r.URL
	}
	return r.URL + "*"
}

func window(r access.Rule) string {
	var parts []string
	if !r.After.IsZero() {
		parts = append(parts, "from "+day(r.After))
	}
	if !r.Before.IsZero() {
		parts = append(parts, "before "+day(r.Before))
	}
	if r.Embargo > 0 {
		parts = append(parts, "newer than "+r.Embargo.String())
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ", ")
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateOnly)
}
