package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/internal/ownfile"
	"github.com/toolprof/toolprof/telemetry"
)

// IndexFile is the page Write writes in its directory.
const IndexFile = "index.html"

//go:embed page.html.tmpl
var pageTemplate string

// page is what the template renders.
type page struct {
	R        *Report
	Frontier Chart
	Trend    []Chart
}

var funcs = template.FuncMap{
	"when": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"unix": func(t *time.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	},
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"join": strings.Join,
	"outcomes": func(m map[string]int) string {
		var parts []string
		for _, o := range outcomeOrder(m) {
			parts = append(parts, fmt.Sprintf("%s %d", o, m[o]))
		}
		return strings.Join(parts, ", ")
	},
	"denyIn": func(r *Report, tool string) []string {
		var in []string
		for _, d := range r.Deny {
			for _, t := range d.Tools {
				if t == tool {
					in = append(in, d.Profile)
				}
			}
		}
		return in
	},
}

// outcomeOrder is m's outcomes in telemetry's stored order, then any other
// by name.
func outcomeOrder(m map[string]int) []string {
	var out, rest []string
	known := map[string]bool{}
	for _, o := range telemetry.Outcomes() {
		known[string(o)] = true
		if m[string(o)] > 0 {
			out = append(out, string(o))
		}
	}
	for o, n := range m {
		if !known[o] && n > 0 {
			rest = append(rest, o)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// Render writes the page for r to b.
func (r *Report) Render(b *bytes.Buffer) error {
	t, err := template.New("page").Funcs(funcs).Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	pg := page{R: r}
	if pg.Frontier, err = r.frontierChart(); err != nil {
		return err
	}
	if pg.Trend, err = r.trendCharts(); err != nil {
		return err
	}
	if err := t.Execute(b, pg); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// pageTitle is in every page Render writes: what says an index.html is a
// report that Write may replace.
const pageTitle = "<title>toolprof usage report</title>"

// ownPage says why b is no page Render wrote; nil when it is one.
func ownPage(b []byte) error {
	if !bytes.Contains(b, []byte(pageTitle)) {
		return fmt.Errorf("no %s", pageTitle)
	}
	return nil
}

// Write renders the page into dir/index.html (atomically), creating dir.
// An index.html already there that is no report (a site's own page) is
// refused, not replaced.
func (r *Report) Write(dir string) (string, error) {
	var b bytes.Buffer
	if err := r.Render(&b); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: --out %s: %w", dir, err)
	}
	path := filepath.Join(dir, IndexFile)
	if err := ownfile.Check(path, ownPage, ownfile.Wording{
		Unreadable: func(err error) error { return fmt.Errorf("report: %w", err) },
		Foreign: func(error) error {
			return fmt.Errorf("report: %s exists and is no toolprof usage report, which writing would replace: name another --out directory, or remove it", path)
		},
	}); err != nil {
		return "", err
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}
