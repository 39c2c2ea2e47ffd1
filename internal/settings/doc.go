// Package settings gives every flag of a command two more sources: an
// environment variable and a key of a TOML configuration file. One rule
// decides between them: a flag on the command line wins over the
// environment, which wins over the file, which wins over the flag's
// default. Resolve applies the rule to a parsed flag.FlagSet and reports
// where each value came from, for `herod config`.
//
// Names derive from the flag's: flag "host-rate" is the variable
// HEROD_HOST_RATE and the file key host-rate (host_rate is accepted
// too). Repeatable flags take a TOML array, or a comma-separated
// variable. A file key or value that no flag accepts is an error naming
// the key and the file; an unknown HEROD_ variable is ignored, since the
// environment is shared with other programs.
//
// The package holds no state; a FlagSet is not safe for concurrent use
// while Resolve runs.
package settings
