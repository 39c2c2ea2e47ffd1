package realweb

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ServeEnv is set to "1" in the environment of the process Spawn starts:
// the test it names runs Serve when it sees it, and skips otherwise.
const ServeEnv = "HEROD_REALWEB_SERVE"

// ConfigFromEnv reads the web's size from HEROD_REALWEB_HOSTS and
// HEROD_REALWEB_PAGES (unset or invalid: the defaults). A spawned server
// inherits the environment, so both processes agree on it.
func ConfigFromEnv() Config {
	hosts, _ := strconv.Atoi(os.Getenv("HEROD_REALWEB_HOSTS"))
	pages, _ := strconv.Atoi(os.Getenv("HEROD_REALWEB_PAGES"))
	return Config{Hosts: hosts, Pages: pages}
}

// seedsPrefix starts the line in which Serve reports the seeds.
const seedsPrefix = "REALWEB "

// Serve runs the web of ConfigFromEnv in this process until its standard
// input closes, after printing the seeds on standard output for Spawn.
func Serve() error {
	w, err := Start(context.Background(), ConfigFromEnv())
	if err != nil {
		return err
	}
	defer w.Close()
	b, err := json.Marshal(w.Seeds())
	if err != nil {
		return fmt.Errorf("realweb serve: %w", err)
	}
	fmt.Printf("%s%s\n", seedsPrefix, b)
	_, err = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	return err
}

// Spawn starts the running test binary again, in a process of its own,
// to run only test (which calls Serve when ServeEnv is set), and returns
// the web's seeds and a function that stops that process. A benchmark
// serves the web this way to keep the server's CPU out of its figures.
func Spawn(test string) (seeds []string, stop func(), err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), ServeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("realweb spawn: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("realweb spawn: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("realweb spawn: %w", err)
	}
	stop = func() {
		stdin.Close()
		cmd.Wait()
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), seedsPrefix); ok {
			if err := json.Unmarshal([]byte(line), &seeds); err != nil {
				stop()
				return nil, nil, fmt.Errorf("realweb spawn: seeds: %w", err)
			}
			go io.Copy(io.Discard, out)
			return seeds, stop, nil
		}
	}
	stop()
	return nil, nil, fmt.Errorf("realweb spawn: the server process said nothing (%v)", sc.Err())
}
