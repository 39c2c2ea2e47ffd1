package settings

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Source tells where a setting's value came from.
type Source string

// The sources, strongest first.
const (
	FromFlag    Source = "flag"
	FromEnv     Source = "env"
	FromFile    Source = "file"
	FromDefault Source = "default"
)

// Setting is one resolved flag: its value and where it came from.
type Setting struct {
	Name   string
	Value  flag.Value
	Source Source
	// Origin names the source: "--name", the variable or the file path;
	// empty for a default.
	Origin string
}

// EnvName returns the environment variable of flag name under prefix:
// EnvName("HEROD_", "host-rate") is "HEROD_HOST_RATE".
func EnvName(prefix, name string) string {
	return prefix + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

// Resolve fills each flag of fs that was not set on the command line
// from the environment variable lookup finds (prefix + name) or else from
// the TOML file at path (none when path is ""), and returns every flag's
// setting in name order. Flags named in skip (the --config flag itself)
// are taken from the command line or environment only. An error names the
// setting and its source.
func Resolve(fs *flag.FlagSet, prefix, path string, lookup func(string) (string, bool), skip ...string) ([]Setting, error) {
	onCmd := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmd[f.Name] = true })
	file, err := readFile(fs, path, skip)
	if err != nil {
		return nil, err
	}
	var out []Setting
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		st := Setting{Name: f.Name, Value: f.Value, Source: FromDefault}
		env := EnvName(prefix, f.Name)
		switch v, inEnv := lookup(env); {
		case onCmd[f.Name]:
			st.Source, st.Origin = FromFlag, "--"+f.Name
		case inEnv:
			st.Source, st.Origin = FromEnv, env
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("setting %s: %s=%q: %w", f.Name, env, v, err))
			}
		case file[f.Name] != nil:
			st.Source, st.Origin = FromFile, path
			for _, v := range file[f.Name] {
				if err := f.Value.Set(v); err != nil {
					errs = append(errs, fmt.Errorf("setting %s: %s: %q: %w", f.Name, path, v, err))
				}
			}
		}
		out = append(out, st)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// readFile reads the TOML file at path into the string values of each
// flag it sets (several for an array), refusing keys no flag has, tables,
// and arrays for flags that are not repeatable.
func readFile(fs *flag.FlagSet, path string, skip []string) (map[string][]string, error) {
	if path == "" {
		return nil, nil
	}
	raw := map[string]any{}
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	out := map[string][]string{}
	var errs []error
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		name := strings.ReplaceAll(k, "_", "-")
		f := fs.Lookup(name)
		if f == nil || slices.Contains(skip, name) {
			errs = append(errs, fmt.Errorf("config file %s: unknown setting %q", path, k))
			continue
		}
		vals, err := strValues(raw[k], isList(f.Value))
		if err != nil {
			errs = append(errs, fmt.Errorf("config file %s: setting %s: %w", path, k, err))
			continue
		}
		if _, dup := out[name]; dup {
			errs = append(errs, fmt.Errorf("config file %s: setting %s given twice", path, name))
			continue
		}
		out[name] = vals
	}
	return out, errors.Join(errs...)
}

// Lister is a flag.Value that is repeatable: each Set adds to its values.
// Its Get returns []string.
type Lister interface {
	flag.Value
	IsList() bool
}

func isList(v flag.Value) bool {
	l, ok := v.(Lister)
	return ok && l.IsList()
}

// strValues converts a decoded TOML value to the strings flag.Value.Set
// takes.
func strValues(v any, list bool) ([]string, error) {
	switch x := v.(type) {
	case []any:
		if !list {
			return nil, fmt.Errorf("an array where one value is wanted")
		}
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, err := scalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			out = []string{""} // an empty array is given, and empty
		}
		return out, nil
	default:
		s, err := scalar(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	default:
		return "", fmt.Errorf("unsupported value %v (%T): want a string, number, boolean or array", v, v)
	}
}

// TOML returns s's value as a TOML value, so that `herod config` prints a
// file --config reads back: strings and durations quoted, numbers and
// booleans bare, repeatable flags as arrays.
func TOML(s Setting) string {
	var v any = s.Value.String()
	if g, ok := s.Value.(flag.Getter); ok {
		v = g.Get()
	}
	switch x := v.(type) {
	case bool, int, int64, uint, uint64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Duration:
		return strconv.Quote(x.String())
	case []string:
		q := make([]string, len(x))
		for i, e := range x {
			q[i] = strconv.Quote(e)
		}
		return "[" + strings.Join(q, ", ") + "]"
	default:
		return strconv.Quote(fmt.Sprint(x))
	}
}

// LookupEnv is os.LookupEnv, the lookup of a real process.
func LookupEnv(k string) (string, bool) { return os.LookupEnv(k) }
