package groups

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestUpstream(t *testing.T) {
	for _, tc := range []struct{ tool, up, short string }{
		{"github__create_issue", "github", "create_issue"},
		{"gorilla_file_system.cd", "gorilla_file_system", "cd"},
		{"srv__a.b", "srv", "a.b"},
		{"book_reservation", "", "book_reservation"},
		{"__hidden", "", "__hidden"},
		{".dot", "", ".dot"},
	} {
		if got := Upstream(tc.tool); got != tc.up {
			t.Errorf("Upstream(%q) = %q, want %q", tc.tool, got, tc.up)
		}
		if got := shortName(tc.tool); got != tc.short {
			t.Errorf("shortName(%q) = %q, want %q", tc.tool, got, tc.short)
		}
	}
}

// plantedSessions draws sessions each using 2-4 tools of one planted
// cluster, with a rare cross-cluster tool as noise.
func plantedSessions(clusters [][]int, n int, seed uint64) []weighted {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []weighted
	for range n {
		c := clusters[rng.IntN(len(clusters))]
		k := min(len(c), 2+rng.IntN(3))
		perm := rng.Perm(len(c))[:k]
		var ts []int
		for _, i := range perm {
			ts = append(ts, c[i])
		}
		if rng.IntN(20) == 0 {
			other := clusters[rng.IntN(len(clusters))]
			ts = append(ts, other[rng.IntN(len(other))])
		}
		slices.Sort(ts)
		out = append(out, weighted{tools: slices.Compact(ts), weight: 1})
	}
	return out
}

func TestPartitionRecoversPlantedClusters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clusters [][]int
	}{
		{"three of five", [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10, 11, 12, 13, 14}}},
		{"uneven sizes", [][]int{{0, 1, 2}, {3, 4, 5, 6, 7, 8, 9}, {10, 11, 12, 13}, {14, 15, 16, 17, 18}}},
		{"interleaved indices", [][]int{{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []int
			for _, c := range tc.clusters {
				nodes = append(nodes, c...)
			}
			slices.Sort(nodes)
			up := make([]string, len(nodes))
			got := partition(nodes, up, plantedSessions(tc.clusters, 400, 7), 1)
			want := slices.Clone(tc.clusters)
			slices.SortFunc(want, func(a, b []int) int { return a[0] - b[0] })
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("communities %v, want the planted %v", got, want)
			}
		})
	}
}

func TestPartitionDeterministic(t *testing.T) {
	clusters := [][]int{{0, 1, 2, 3}, {4, 5, 6, 7, 8}, {9, 10, 11}}
	nodes := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	up := make([]string, 12)
	demand := plantedSessions(clusters, 60, 3) // few sessions: ties are likely
	first := fmt.Sprint(partition(nodes, up, demand, 2))
	for i := range 20 {
		if got := fmt.Sprint(partition(nodes, up, demand, 2)); got != first {
			t.Fatalf("run %d: %s, first run %s", i, got, first)
		}
	}
}

func TestPartitionKeepsUpstreamsApart(t *testing.T) {
	// 0 (a) is mostly used with 2 (b), and 1 (a) with 3 (b): co-usage
	// alone would group 0 with 2 and 1 with 3; upstreams keep them apart,
	// and within a, 0 and 1 are co-used once. 2 and 3 never are.
	up := []string{"a", "a", "b", "b"}
	demand := []weighted{{tools: []int{0, 2}, weight: 50}, {tools: []int{1, 3}, weight: 50}, {tools: []int{0, 1}, weight: 1}}
	got := partition([]int{0, 1, 2, 3}, up, demand, 1)
	for _, c := range got {
		for _, tl := range c {
			if up[tl] != up[c[0]] {
				t.Fatalf("community %v mixes upstreams %q and %q", c, up[c[0]], up[tl])
			}
		}
	}
	if fmt.Sprint(got) != "[[0 1] [2] [3]]" {
		t.Errorf("communities %v, want [[0 1] [2] [3]]", got)
	}
}

func TestPartitionIsolatedTools(t *testing.T) {
	// Tools used only alone have no edge: each is its own community.
	got := partition([]int{0, 1, 2}, make([]string, 3), []weighted{{tools: []int{0}, weight: 3}, {tools: []int{1}, weight: 2}, {tools: []int{2}, weight: 1}}, 1)
	if fmt.Sprint(got) != "[[0] [1] [2]]" {
		t.Errorf("communities %v, want singletons", got)
	}
}
