// Package layering holds the test that keeps the two wings of the module
// apart: the serving side (cmd/server and what it links) imports nothing of
// the analysis side (derive, groups, bench, report, evaluate, generate) nor their
// heavy dependencies, so a server binary carries no solver, plot or table
// code and an analysis change cannot alter what is served.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the import path prefixes the serving side must not link.
var forbidden = []string{
	"gonum.org/",
	"github.com/olekukonko/tablewriter",
	"github.com/toolprof/toolprof/derive",
	"github.com/toolprof/toolprof/groups",
	"github.com/toolprof/toolprof/bench",
	"github.com/toolprof/toolprof/report",
	"github.com/toolprof/toolprof/evaluate",
	"github.com/toolprof/toolprof/generate",
}

// TestServerLinksNoAnalysis: go list -deps of cmd/server holds no package
// of the analysis side.
func TestServerLinksNoAnalysis(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/toolprof/toolprof/cmd/server").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/server: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps ./cmd/server listed no packages")
	}
	for _, pkg := range deps {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("cmd/server links %s (analysis side %s)", pkg, f)
			}
		}
	}
}
