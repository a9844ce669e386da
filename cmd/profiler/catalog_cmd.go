package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/toolsource"
)

// runCatalog writes the tools/list dump of live upstreams (every page) in
// the catalog format, so that profiler bench --catalog can price it later
// without running them.
func runCatalog(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{W: stderr}
	fs := newCommandFlags("catalog", "[--out FILE] (--launch FILE | -- CMD ARGS)",
		"Starts the upstreams and writes the tools they offer as a tools/list result\n"+
			"{\"tools\": [...]}, with the servers' instructions as \"instructions\": the catalog that\n"+
			"derive and bench --catalog read.", stderr)
	var src toolsource.Spec
	src.Register(fs, false)
	out := fs.String("out", "", "write the catalog to `FILE` (atomically) instead of stdout")
	if help, err := src.Parse("catalog", fs, args, false); help || err != nil {
		return err
	}
	if *out != "" {
		if err := catalog.CheckReplace(*out); err != nil {
			return usagef("catalog: --out: %v", err)
		}
	}
	source, err := toolsource.Open(ctx, src, stderr)
	if err != nil {
		return err
	}
	defer source.CloseInto(&err)
	cat, err := source.Catalog(ctx, stderr)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := cat.Write(&buf); err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	// Read it back: what is written must load as a catalog.
	if _, err := catalog.Decode(bytes.NewReader(buf.Bytes())); err != nil {
		return fmt.Errorf("%s: %w", source.Desc, err)
	}
	if *out != "" {
		if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "catalog: wrote %d tools of %s to %s\n", len(cat.Tools), source.Desc, *out)
		return nil
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
