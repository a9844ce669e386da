// Command gen writes a synthetic catalog and session trace for scale runs of
// profiler derive:
//
//	go run ./bench/sessiongen/gen -sessions 1000000 -tools 300 -dir /tmp/scale
//
// writes DIR/catalog.json and DIR/trace.jsonl (atomically: a temporary file,
// then a rename).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolprof/toolprof/bench/sessiongen"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("sessions", 10000, "sessions to generate")
	tools := fs.Int("tools", 300, "catalog size")
	seed := fs.Uint64("seed", 1, "random seed")
	dir := fs.String("dir", ".", "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 0 || *tools < 1 {
		return fmt.Errorf("-sessions %d -tools %d: want sessions >= 0 and at least one tool", *n, *tools)
	}
	names := sessiongen.ToolNames(*tools)
	write := func(name string, fn func(w io.Writer) error) error {
		path := filepath.Join(*dir, name)
		f, err := os.CreateTemp(*dir, "."+name+".*.tmp")
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer os.Remove(f.Name())
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return os.Rename(f.Name(), path)
	}
	if err := write("catalog.json", func(w io.Writer) error { return sessiongen.WriteCatalog(w, names, *seed) }); err != nil {
		return err
	}
	if err := write("trace.jsonl", func(w io.Writer) error {
		return sessiongen.WriteTrace(w, sessiongen.Config{Seed: *seed, Sessions: *n, Tools: names})
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s: %d sessions over %d tools (seed %d)\n",
		filepath.Join(*dir, "catalog.json"), filepath.Join(*dir, "trace.jsonl"), *n, *tools, *seed)
	return nil
}
