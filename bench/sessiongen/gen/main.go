// Command gen writes a synthetic catalog and session trace for scale runs of
// profiler derive:
//
//	go run ./bench/sessiongen/gen -sessions 1000000 -tools 300 -dir /tmp/scale
//
// writes DIR/catalog.json and DIR/trace.jsonl.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolprof/toolprof/bench/sessiongen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	n := fs.Int("sessions", 10000, "sessions to generate")
	tools := fs.Int("tools", 300, "catalog size")
	seed := fs.Uint64("seed", 1, "random seed")
	dir := fs.String("dir", ".", "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := sessiongen.ToolNames(*tools)
	write := func(name string, fn func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(*dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		return f.Close()
	}
	if err := write("catalog.json", func(f *os.File) error { return sessiongen.WriteCatalog(f, names, *seed) }); err != nil {
		return err
	}
	return write("trace.jsonl", func(f *os.File) error {
		return sessiongen.WriteTrace(f, sessiongen.Config{Seed: *seed, Sessions: *n, Tools: names})
	})
}
