// Command herod runs a node of the herod peer-to-peer web archive.
//
//	herod run      a volunteer node
//	herod config   the settings run would use, and their sources
//	herod demo     a local 3-node ring crawling a built-in sample web
//	herod seed     hand URLs to a running node
//	herod status   show a running node's state and its ring (--watch)
//	herod export   write WARC and CDXJ for a host, prefix or date range
//	herod fsck     check (and repair) a node's archive
//	herod sim      the ring simulator's report
//	herod purge    remove and refuse the versions a peer signed
//	herod version  the build: version, Go version, VCS revision
//	herod access   add, list, remove or check access rules
//	herod import   import WARC, WACZ and ARC files into the ring
//
// Run "herod <command> --help" for each command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/herod-archive/herod/internal/buildinfo"
)

// command is one subcommand: its name, a line of help and its entry point.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"run", "run a volunteer node", runCmd},
	{"config", "print the settings run would use (flags, HEROD_* variables, --config file) and where each came from", configCmd},
	{"demo", "run a local 3-node ring that crawls a built-in sample web", demoCmd},
	{"seed", "hand URLs to a running node for crawling", seedCmd},
	{"status", "show the state of a running node and of its ring; --watch to follow it", statusCmd},
	{"export", "write WARC and CDXJ of a host, URL prefix or URL (from disk or ring-wide)", exportCmd},
	{"fsck", "verify a stopped node's archive; --repair rebuilds its index", fsckCmd},
	{"sim", "simulate a ring of up to 10,000 virtual servers in memory and report hops, balance, failures, churn", simCmd},
	{"purge", "remove every version a peer signed and refuse that peer: on the running node, ordered ring-wide (or --offline on a stopped one)", purgeCmd},
	{"version", "print herod's version, the Go version that built it and its VCS revision", versionCmd},
	{"import", "import WARC, WACZ and ARC files into the ring through a running node: each record to its URL's owner, at its original date, marked imported", importCmd},
	{"access", "add, list, remove or check the running node's access rules (block, exclude, embargo; --ring: signed, ring-wide)", accessCmd},
	{"search", "search the text of the archived pages ring-wide, as of any date (words, \"phrases\", site:HOST)", searchCmd},
	{"rank", "run PageRank across the ring for a crawl day (admin token), or print a URL's rank", rankCmd},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			default:
				fmt.Fprintf(stderr, "herod %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if c := closest(args[0], names); c != "" {
		fmt.Fprintf(stderr, "herod: unknown command %q: did you mean `herod %s`?\n", args[0], c)
	} else {
		fmt.Fprintf(stderr, "herod: unknown command %q; run `herod help` for the commands\n", args[0])
	}
	return 2
}

// versionCmd prints the build of this binary (internal/buildinfo).
func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "version", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("takes no arguments, got %q", fs.Arg(0))
	}
	_, err := fmt.Fprintln(stdout, buildinfo.Read())
	return err
}

// errUsage reports bad flags; the flag package has already said what.
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprint(w, `herod is a peer-to-peer web archive: volunteers' nodes form a Chord ring,
crawl the web every day, keep every version of every page, and serve a
Wayback-style gateway to browse the archive by date.

Usage:
  herod <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Start here:
  herod demo                      a local ring and sample web; open the printed URL
  herod run --data ~/herod --join /ip4/203.0.113.7/tcp/4001/p2p/12D3Koo...

Run "herod <command> --help" for the flags of a command.
`)
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("herod "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: herod %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// logger returns a text logger on w: warnings only, or everything with verbose.
func logger(w io.Writer, verbose bool) *slog.Logger { return newLogger(w, "text", verbose) }

// listFlag is a repeatable flag that also splits on commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Get returns the values, for herod config.
func (l *listFlag) Get() any { return []string(*l) }

// IsList marks the flag repeatable (settings.Lister): a TOML array sets it.
func (l *listFlag) IsList() bool { return true }

func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}
