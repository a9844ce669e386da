package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/atomicfile"
)

// runCatalog writes the tools/list dump of live upstreams (every page) in
// the catalog format, so that profiler bench --catalog can price it later
// without running them.
func runCatalog(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{w: stderr}
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profiler catalog (--launch FILE | -- CMD ARGS) [--out FILE]\n\n"+
			"Writes the tools the upstreams offer, as a tools/list result {\"tools\": [...]}.\n\nflags:")
		fs.PrintDefaults()
	}
	var src sourceFlags
	src.register(fs, false)
	out := fs.String("out", "", "write the catalog to `FILE` (atomically) instead of stdout")
	if help, err := src.parse("catalog", fs, args, false); help || err != nil {
		return err
	}
	source, err := src.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer source.closeInto(&err)
	tools, err := source.up.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("list tools of %s: %w", source.desc, err)
	}
	var buf bytes.Buffer
	if err := (&catalog.Catalog{Tools: tools}).Write(&buf); err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	// Read it back: what is written must load as a catalog.
	if _, err := catalog.Decode(bytes.NewReader(buf.Bytes())); err != nil {
		return fmt.Errorf("%s: %w", source.desc, err)
	}
	if *out != "" {
		if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "catalog: wrote %d tools of %s to %s\n", len(tools), source.desc, *out)
		return nil
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
