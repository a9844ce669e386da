package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// runEvaluate replays held-out sessions against the ways of serving tools
// (package evaluate) and prints the figures per arm.
func runEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("evaluate", "--profiles FILE --catalog FILE --trace FILE [flags]",
		"Replays the newest sessions of a trace against full, the default profile as a 2026-07-28 client\n"+
			"gets it, groups (earlier clients only), search over a base profile, and the base always loaded;\n"+
			"prints per arm the protocols its figures are for, uses served, recall, searches, cost per session.", stderr)
	profilesPath := fs.String("profiles", "", "generated profiles `FILE` (its profiles.toml beside it is read too; required)")
	catalogPath := fs.String("catalog", "", "tools/list catalog `FILE` (required)")
	tracePath := fs.String("trace", "", "session JSON Lines `FILE` with each turn's words (required)")
	holdout := fs.Float64("holdout", derive.DefaultHoldout, "newest `share` of sessions replayed (derive learned from the rest)")
	base := fs.String("search-base", "", "`PROFILE` the search and always_load arms list (default: the first with search = true, else the default)")
	limit := fs.Int("limit", toolsearch.DefaultLimit, "find_tools' `limit` in the search arm")
	clientResults := fs.Int("client-results", evaluate.DefaultClientResults, "definitions the client's search returns per missing tool in the always_load arm (`N`)")
	format := fs.String("format", "text", "output `format`: text or json")
	if help, err := parseCommandFlags("evaluate", fs, args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("evaluate: unexpected argument %q", fs.Arg(0))
	case *profilesPath == "" || *catalogPath == "" || *tracePath == "":
		return usagef("evaluate: --profiles FILE, --catalog FILE and --trace FILE are required")
	case !(*holdout > 0 && *holdout < 1):
		return usagef("evaluate: --holdout %v: want a share above 0 and below 1", *holdout)
	case *limit < 1 || *limit > toolsearch.MaxLimit:
		return usagef("evaluate: --limit %d: want 1 to %d", *limit, toolsearch.MaxLimit)
	case *clientResults < 1:
		return usagef("evaluate: --client-results %d: want at least 1", *clientResults)
	case *format != "text" && *format != "json":
		return usagef("evaluate: --format %q: want text or json", *format)
	}
	cat, err := catalog.Load(*catalogPath)
	if err != nil {
		return err
	}
	set, err := profiles.Load(*profilesPath)
	if err != nil {
		return err
	}
	sessions, err := evaluate.LoadTrace(*tracePath)
	if err != nil {
		return err
	}
	_, test := derive.SplitByStart(sessions, evaluate.Session.Started, *holdout)
	if len(test) == 0 {
		return fmt.Errorf("evaluate: trace %s: no held-out sessions to replay (%d sessions, --holdout %v)", *tracePath, len(sessions), *holdout)
	}
	rep, err := evaluate.Run(ctx, evaluate.Config{Catalog: cat, Profiles: set, Sessions: test, SearchBase: *base,
		Limit: *limit, ClientResults: *clientResults, Cache: price.DefaultCache()})
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(stdout)
}
