package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/node"
)

// errProblems reports that fsck found problems that remain.
var errProblems = errors.New("the archive has problems")

// fsckCmd verifies a stopped node's archive against its files and, with
// --repair, rebuilds the index from the files (quarantining corrupt ones)
// and verifies again; with --compact it first rewrites the segments whose
// purged records take at least --min-dead of their bytes. It fails if
// problems remain.
func fsckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fsck", "fsck --data DIR [--repair] [--compact [--min-dead F]]", stderr)
	home, _ := os.UserHomeDir()
	data := fs.String("data", filepath.Join(home, ".herod"), "data directory of the node (the node must be stopped)")
	repair := fs.Bool("repair", false, "rebuild the index from the segments, cutting damaged tails (kept in quarantine/)")
	compact := fs.Bool("compact", false, "rewrite segments without the records of purged versions")
	minDead := fs.Float64("min-dead", archive.DefaultCompactMinDead, "with --compact, the share of a segment's bytes that must be dead for it to be rewritten (0-1]")
	var dayLen time.Duration
	durationVar(fs, &dayLen, "day", node.DefaultDayLength, "crawl day length the node runs with")
	day := &dayLen
	verbose := fs.Bool("v", false, "verbose logs")
	if err := parse(fs, args); err != nil {
		return err
	}
	dir := filepath.Join(*data, "archive")
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("--data %s: no archive: %w", *data, err)
	}
	lock, err := node.LockDataDir(*data)
	if err != nil {
		return fmt.Errorf("%w (stop it first)", err)
	}
	defer lock.Close()
	opt := archive.Options{DayLength: *day, Logger: logger(stderr, *verbose)}
	// Opening the store migrates the one-file layout into segments (and
	// resumes a migration a crash interrupted) and cuts uncommitted tails.
	st, err := archive.Open(dir, opt)
	if err != nil {
		return fmt.Errorf("%w (is the node still running?)", err)
	}
	if err := st.Close(); err != nil {
		return err
	}
	if *compact {
		crep, err := archive.Compact(ctx, dir, opt, archive.CompactOptions{MinDead: *minDead})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "compact: %d segments, %d rewritten, %d removed, %d bytes -> %d\n",
			crep.Segments, crep.Rewritten, crep.Removed, crep.Before, crep.After)
	}
	// The archive reports no counts while it checks: the line shows the
	// step and the time it has taken so far.
	rep, err := withProgress(ctx, stderr, "fsck: checking every segment", func() (archive.Report, error) { return archive.Fsck(ctx, dir, opt) })
	if err != nil {
		return fmt.Errorf("%w (is the node still running?)", err)
	}
	printReport(stdout, "fsck", rep)
	if rep.OK() {
		return nil
	}
	if !*repair {
		return fmt.Errorf("%w; run with --repair to rebuild the index", errProblems)
	}
	rrep, err := withProgress(ctx, stderr, "fsck: rebuilding the index", func() (archive.Report, error) { return archive.Reindex(ctx, dir, opt) })
	if err != nil {
		return err
	}
	printReport(stdout, "reindex", rrep)
	if len(rrep.Damaged) > 0 {
		// Damaged bytes before valid records stay in place after a
		// reindex (copied to quarantine/): rewrite those segments without
		// them, so that the archive checks clean.
		crep, err := archive.Compact(ctx, dir, opt, archive.CompactOptions{Segments: rrep.Damaged})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "repair: cut damaged records out of %d segments (the bytes are in %s); %d bytes -> %d; replication pulls back from the replicas any version they held\n",
			len(rrep.Damaged), filepath.Join(dir, "quarantine"), crep.Before, crep.After)
	}
	if rep, err = withProgress(ctx, stderr, "fsck: checking again", func() (archive.Report, error) { return archive.Fsck(ctx, dir, opt) }); err != nil {
		return err
	}
	printReport(stdout, "fsck after repair", rep)
	if !rep.OK() {
		return fmt.Errorf("%w after repair", errProblems)
	}
	return nil
}

// withProgress runs step with an elapsed-time line on a terminal.
func withProgress(ctx context.Context, w io.Writer, what string, step func() (archive.Report, error)) (archive.Report, error) {
	prog := newProgress(w, what)
	ctx, cancel := context.WithCancel(ctx)
	prog.tick(ctx)
	rep, err := step()
	cancel()
	prog.done()
	return rep, err
}

// maxListed bounds the file names printed per list of a report.
const maxListed = 20

// printReport writes a report's totals and the first files of each list.
func printReport(w io.Writer, title string, r archive.Report) {
	status := "ok"
	if !r.OK() {
		status = "PROBLEMS"
	}
	fmt.Fprintf(w, "%s: %s: %d segments, %d valid versions, %d bytes, %d skipped, %d damaged extents, %d unindexed, %d missing, %d mismatched index entries\n",
		title, status, r.Files, r.Versions, r.Bytes, r.Skipped, len(r.Corrupt), len(r.Unindexed), len(r.Missing), r.Mismatched)
	for _, l := range []struct {
		name  string
		files []string
	}{{"corrupt", r.Corrupt}, {"unindexed", r.Unindexed}, {"missing", r.Missing}} {
		for i, f := range l.files {
			if i == maxListed {
				fmt.Fprintf(w, "  … and %d more %s\n", len(l.files)-maxListed, l.name)
				break
			}
			fmt.Fprintf(w, "  %s: %s\n", l.name, f)
		}
	}
}
