//go:build eval

package groups_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// topicSessions makes n sessions over tools, as an agent working on one
// thing calls them: a first tool drawn at random, then one to three tools
// whose names share a word with it (an issue's tools, a pull request's).
// The GitHub catalogs come without traces; these give groups to name.
func topicSessions(tools []string, n int) []telemetry.Usage {
	r := rand.New(rand.NewPCG(7, 11))
	words := func(s string) []string { return strings.Split(s, "_") }
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]telemetry.Usage, n)
	for i := range out {
		first := tools[r.IntN(len(tools))]
		var near []string
		for _, t := range tools {
			if t != first && slices.ContainsFunc(words(first), func(w string) bool { return len(w) > 3 && slices.Contains(words(t), w) }) {
				near = append(near, t)
			}
		}
		set := []string{first}
		for k := r.IntN(3) + 1; k > 0 && len(near) > 0; k-- {
			j := r.IntN(len(near))
			set = append(set, near[j])
			near = slices.Delete(near, j, j+1)
		}
		slices.Sort(set)
		out[i] = telemetry.Usage{Tools: slices.Compact(set), Calls: len(set), Session: telemetry.Session{ID: fmt.Sprint(i), Start: start.Add(time.Duration(i) * time.Minute)}}
	}
	return out
}

// TestEvalGroupNames derives groups on the GitHub catalogs and checks
// their names say what the groups do: no two share a name stem (the name
// less a "-N" count, its words stemmed: "issue" and "issues" are one), and
// none is only a word prefix of tool names that start tools of three or
// more groups ("list", "get"): such a prefix names none of them.
// Run with: go test -tags eval ./groups -run EvalGroupNames -v
func TestEvalGroupNames(t *testing.T) {
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	count := regexp.MustCompile(`-[0-9]+$`)
	for _, name := range []string{"github-mcp-server", "github-mcp-server-v1.0.0-all"} {
		t.Run(name, func(t *testing.T) {
			cat, err := catalog.Load(filepath.Join(sharedData(), "catalogs", name+".json"))
			if err != nil {
				t.Skipf("real data not available: %v", err)
			}
			var names []string
			for _, tl := range cat.Tools {
				names = append(names, tl.Name)
			}
			res, err := groups.Choose(topicSessions(names, 600), groups.Config{Catalog: cat.Tools, Counter: counter, Holdout: 0.2})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Groups) < 3 {
				t.Fatalf("%d groups: too few to test naming", len(res.Groups))
			}
			groupOf := map[string]string{}
			for _, g := range res.Groups {
				for _, tl := range g.Tools {
					groupOf[tl] = g.Name
				}
			}
			stems := map[string]string{}
			for _, g := range res.Groups {
				t.Logf("%-28s %s", g.Name, g.Description)
				stem := count.ReplaceAllString(g.Name, "")
				key := strings.Join(toolsearch.Terms(stem), "_")
				if other, dup := stems[key]; dup {
					t.Errorf("groups %q and %q share the name stem %q", other, g.Name, stem)
				}
				stems[key] = g.Name
				spread := map[string]bool{}
				for _, tl := range names {
					if strings.HasPrefix(tl, stem+"_") {
						spread[groupOf[tl]] = true
					}
				}
				if spread[g.Name] && len(spread) >= 3 {
					t.Errorf("group %q is named by a prefix of tools in %d groups", g.Name, len(spread))
				}
			}
		})
	}
}
