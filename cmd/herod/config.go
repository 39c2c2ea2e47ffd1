package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/herod-archive/herod/internal/settings"
)

// configCmd prints the settings herod run would start with, given the
// same flags, environment and --config file: a TOML file --config reads,
// each line commented with where its value came from. Bad values are
// refused as herod run refuses them.
func configCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("config", "config [run flags]", stderr)
	var rs runSettings
	rs.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := rs.resolve(fs, settings.LookupEnv); err != nil {
		return err
	}
	printSettings(stdout, rs.resolved)
	return nil
}

// printSettings writes settings as TOML lines with their source as a
// comment; the --config flag itself is a comment (a file cannot name
// another).
func printSettings(w io.Writer, ss []settings.Setting) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "# herod run settings: flags > %s* variables > --config file > defaults\n", envPrefix)
	for _, s := range ss {
		from := string(s.Source)
		if s.Origin != "" {
			from += " " + s.Origin
		}
		line := s.Name + " = " + settings.TOML(s)
		if s.Name == "config" {
			line = "# " + line
		}
		fmt.Fprintf(tw, "%s\t# %s\n", line, from)
	}
	tw.Flush()
}
