package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/node"
)

// defaultNode is the gateway of a node run with the default --listen.
const defaultNode = "http://127.0.0.1:5001/"

var httpClient = &http.Client{Timeout: 30 * time.Second}

// endpoint joins a node's base URL and a path.
func endpoint(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--node %q: want the gateway URL, like %s", base, defaultNode)
	}
	return strings.TrimSuffix(u.String(), "/") + path, nil
}

// defaultDataDir is the data directory of `herod run` without --data.
func defaultDataDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".herod")
}

// nodeOf returns the gateway URL a command talks to: --node when given,
// else the URL the node running on data recorded there (gateway-url),
// else the default node's.
func nodeOf(fs *flag.FlagSet, nodeURL, data string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "node" })
	if given {
		return nodeURL
	}
	if u, err := gateway.ReadGatewayURL(data); err == nil {
		return u
	}
	return nodeURL
}

// unreachable rewrites the error of a request to a node that does not
// answer into one line that says what to do.
func unreachable(err error, base, data string) error {
	var op *net.OpError
	if !errors.As(err, &op) {
		return err
	}
	cause := op.Err.Error()
	if errors.Is(err, syscall.ECONNREFUSED) {
		cause = "connection refused"
	}
	return fmt.Errorf("cannot reach the node at %s (%s): is `herod run --data %s` running? Else pass its gateway URL with --node", base, cause, data)
}

func seedCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seed", "seed [--data DIR] [--node URL] URL…", stderr)
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	data := fs.String("data", defaultDataDir(), "the node's data directory, which holds its admin token ("+gateway.AdminTokenFile+") and its gateway URL ("+gateway.GatewayURLFile+")")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	token, err := gateway.ReadAdminToken(*data)
	if err != nil {
		return fmt.Errorf("%w (start the node once, or pass its --data)", err)
	}
	base := nodeOf(fs, *nodeURL, *data)
	ep, err := endpoint(base, "/api/seed")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, strings.NewReader(strings.Join(fs.Args(), "\n")))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return unreachable(err, base, *data)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", ep, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: %s: %s", ep, resp.Status, strings.TrimSpace(string(body)))
	}
	var reply gateway.SeedReply
	if err := json.Unmarshal(body, &reply); err != nil || len(reply.Results) != fs.NArg() {
		return fmt.Errorf("%s answered %d bytes that are not one result per URL (is the node older than this herod?)", ep, len(body))
	}
	return printSeed(stdout, reply.Results)
}

// errRefused reports a seed some of whose URLs the node refused; each was
// already printed with its reason.
var errRefused = errors.New("refused")

// printSeed writes one line per seeded URL: what became of it. It returns
// an error when the node refused any.
func printSeed(w io.Writer, res []gateway.SeedResult) error {
	refused := 0
	for _, r := range res {
		switch r.Outcome {
		case gateway.SeedQueued:
			fmt.Fprintf(w, "queued          %s\n", r.Canonical)
		case gateway.SeedFetchedToday:
			fmt.Fprintf(w, "fetched today   %s at %s UTC; it is crawled once a day, next from %s UTC\n",
				r.Canonical, r.Fetched.UTC().Format(time.TimeOnly), r.Next.UTC().Format("2006-01-02 15:04"))
		default:
			refused++
			fmt.Fprintf(w, "refused         %s: %s\n", r.URL, r.Reason)
		}
	}
	if refused > 0 {
		return fmt.Errorf("%w: %d of %d URL(s), see above", errRefused, refused, len(res))
	}
	return nil
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", "status [--node URL] [--data DIR] [--json] [--watch [INTERVAL]]", stderr)
	nodeURL := fs.String("node", defaultNode, "gateway URL of the node (default: the one the node running on --data recorded there)")
	data := fs.String("data", defaultDataDir(), "the node's data directory: its gateway URL, and its admin token, which reads a private status")
	asJSON := fs.Bool("json", false, "print the raw JSON status")
	var w watchFlag
	fs.Var(&w, "watch", fmt.Sprintf("show the status again every interval (--watch alone: every %s; --watch 5s) until interrupted; the screen is redrawn on a terminal", defaultWatch))
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := w.takeArg(fs); err != nil {
		return err
	}
	watch := (*time.Duration)(&w)
	if *watch < 0 || (*watch > 0 && *watch < 100*time.Millisecond) {
		return fmt.Errorf("--watch %s: want 100ms or more", *watch)
	}
	token, _ := gateway.ReadAdminToken(*data)
	base := nodeOf(fs, *nodeURL, *data)
	tty := isTerminal(stdout)
	for {
		var b strings.Builder
		err := showStatus(ctx, &b, base, token, *asJSON)
		if err != nil {
			err = unreachable(err, base, *data)
		}
		if *watch == 0 {
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, b.String())
			return err
		}
		if tty {
			io.WriteString(stdout, "\x1b[H\x1b[2J") // home, clear
		}
		fmt.Fprintf(stdout, "%s  every %s (Ctrl-C to stop)\n", time.Now().Format(time.TimeOnly), *watch)
		if err != nil {
			fmt.Fprintf(stdout, "%v\n", err) // the node may be restarting: keep watching
		}
		io.WriteString(stdout, b.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*watch):
		}
	}
}

// defaultWatch is the interval of a bare status --watch.
const defaultWatch = 2 * time.Second

// watchFlag is status --watch: a flag that may be given alone (every
// defaultWatch) or with an interval, --watch=5s or --watch 5s.
type watchFlag time.Duration

func (w *watchFlag) String() string { return time.Duration(*w).String() }

// IsBoolFlag lets --watch stand alone; the flag package then passes "true".
func (w *watchFlag) IsBoolFlag() bool { return true }

func (w *watchFlag) Set(s string) error {
	switch s {
	case "true":
		*w = watchFlag(defaultWatch)
		return nil
	case "false":
		*w = 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want an interval, like 2s")
	}
	*w = watchFlag(d)
	return nil
}

// takeArg takes the interval of "--watch 5s", which the flag package
// leaves as an argument since --watch may stand alone; any other argument
// is refused.
func (w *watchFlag) takeArg(fs *flag.FlagSet) error {
	switch fs.NArg() {
	case 0:
		return nil
	case 1:
		if d, err := time.ParseDuration(fs.Arg(0)); err == nil && *w != 0 {
			*w = watchFlag(d)
			return nil
		}
	}
	return fmt.Errorf("unexpected argument %q: status takes flags only (--watch 5s, --node URL)", fs.Arg(0))
}

// getJSON reads path from the node at base, with the admin token if any.
func getJSON(ctx context.Context, base, path, token string) ([]byte, error) {
	ep, err := endpoint(base, path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep, nil)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status: %s: %s", ep, resp.Status)
	}
	return body, nil
}

// showStatus writes the node's status and its ring's nodes to w.
func showStatus(ctx context.Context, w io.Writer, base, token string, asJSON bool) error {
	body, err := getJSON(ctx, base, "/api/status", token)
	if err != nil {
		return err
	}
	if asJSON {
		_, err := w.Write(body)
		return err
	}
	var st node.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("status: decode: %w", err)
	}
	printStatus(w, st)
	body, err = getJSON(ctx, base, "/ring?format=json", token)
	if err != nil {
		return err
	}
	var rv ringview.View
	if err := json.Unmarshal(body, &rv); err != nil {
		return fmt.Errorf("ring: decode: %w", err)
	}
	printRing(w, rv)
	return nil
}

// printRing writes the ring's health headline and a table of its real
// nodes: those up, and those dead or departed with since when.
func printRing(w io.Writer, rv ringview.View) {
	h := rv.Health()
	fmt.Fprintf(w, "\nring: %s (%d virtual servers known here)\n", h.Headline(), len(rv.Nodes))
	if warn := h.Warning(); warn != "" {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "address\tstate\treached\tcrawl day\tqueued\tfetched\tversions\tsize\tbelow k\trepl. lag\tpeer")
	for _, p := range rv.Peers {
		reached := p.Reach
		if p.NAT() {
			reached = "NAT (" + p.Reach + ")"
		}
		if p.Relayed {
			reached = "relayed " + reached
		}
		peer := gateway.ShortPeer(p.Peer)
		if p.Peer == rv.Self {
			peer += " (this node)"
		}
		if !p.Up() {
			state := p.State
			if !p.Since.IsZero() {
				state += " since " + gateway.FormatSince(p.Since, now)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t%s\n", p.Addr, state, reached, peer)
			continue
		}
		day := gateway.FormatDay(p.DayStart)
		if day == "" {
			day = fmt.Sprint(p.Day)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%.0fs\t%s\n", p.Addr, p.State, reached, day, p.Queued, p.Fetched, p.Versions,
			gateway.FormatBytes(p.Bytes), p.BelowK, p.LagSec, peer)
	}
	tw.Flush()
}

func printStatus(w io.Writer, st node.Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if m := st.Members; m.K > 0 {
		fmt.Fprintf(tw, "ring nodes\t%d up, %d dead, %d departed (k = %d)\n", m.Up, m.Dead, m.Departed, m.K)
		if m.TooFew {
			fmt.Fprintf(tw, "warning\tfewer nodes up than k: no version can have %d copies\n", m.K)
		}
	}
	fmt.Fprintf(tw, "peer\t%s\n", st.Peer)
	fmt.Fprintf(tw, "ring address\t%s (reached: %s)\n", st.Addr, st.Reach)
	fmt.Fprintf(tw, "join with\t--join %s\n", st.Multiaddr)
	fmt.Fprintf(tw, "gateway\t%s\n", st.Gateway)
	fmt.Fprintf(tw, "archived pages served from\t%s\n", st.Replay)
	if st.Crawl.DayStarted.IsZero() {
		fmt.Fprintf(tw, "crawl day\t%d\n", st.Crawl.Day)
	} else {
		fmt.Fprintf(tw, "crawl day\t%d, started %s\n", st.Crawl.Day, gateway.FormatSince(st.Crawl.DayStarted, time.Now()))
	}
	fmt.Fprintf(tw, "queued\t%d\n", st.Crawl.Queued)
	fmt.Fprintf(tw, "connections to sites open\t%d\n", st.Crawl.Connections)
	fmt.Fprintf(tw, "fetched today\t%d\n", st.Crawl.FetchedToday)
	if st.Crawl.FetchedToday > 0 {
		mean := time.Duration(st.Crawl.ResponseSec / float64(st.Crawl.FetchedToday) * float64(time.Second))
		fmt.Fprintf(tw, "mean time to response headers\t%v\n", mean.Round(time.Microsecond))
	}
	fmt.Fprintf(tw, "new versions\t%d\n", st.Crawl.NewVersions)
	fmt.Fprintf(tw, "not modified (304)\t%d\n", st.Crawl.NotModified)
	fmt.Fprintf(tw, "unchanged (same digest)\t%d\n", st.Crawl.Unchanged)
	for k, v := range st.Crawl.ErrorsByKind {
		fmt.Fprintf(tw, "errors: %s\t%d\n", k, v)
	}
	fmt.Fprintf(tw, "archive versions\t%d (%s)\n", st.Archive.Versions, gateway.FormatBytes(st.Archive.Bytes))
	fmt.Fprintf(tw, "archive segments\t%d\n", st.Archive.Segments)
	fmt.Fprintf(tw, "links forwarded / pending\t%d / %d\n", st.Forward.Sent, st.Forward.Pending)
	fmt.Fprintf(tw, "links not sent again (owner has them)\t%d\n", st.Forward.Skipped)
	fmt.Fprintf(tw, "links received / queued here after too many hops\t%d / %d\n", st.Links.Received, st.Links.OverHops)
	fmt.Fprintf(tw, "links passed straight to a closer owner\t%d\n", st.Forward.Direct)
	h := st.Replication.Health
	fmt.Fprintf(tw, "replication: ranges behind / checked\t%d / %d\n", h.Behind, h.Ranges)
	fmt.Fprintf(tw, "replication: versions below k copies\t%d\n", h.BelowK)
	fmt.Fprintf(tw, "replication lag\t%.0f s\n", h.LagSec)
	fmt.Fprintf(tw, "idle\t%v\n", st.Idle)
	tw.Flush()
}
