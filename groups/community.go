package groups

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/community"
	"gonum.org/v1/gonum/graph/iterator"
)

// Upstream returns the upstream a tool name carries: the part before the
// first "__" (gateway namespacing, "server__tool") or else before the first
// "." (bfcl's "group.function"); "" when the name carries none.
func Upstream(tool string) string {
	if i := strings.Index(tool, "__"); i > 0 {
		return tool[:i]
	}
	if i := strings.IndexByte(tool, '.'); i > 0 {
		return tool[:i]
	}
	return ""
}

// shortName is the tool name without its upstream prefix.
func shortName(tool string) string {
	up := Upstream(tool)
	if up == "" {
		return tool
	}
	rest := tool[len(up):]
	return strings.TrimPrefix(strings.TrimPrefix(rest, "__"), ".")
}

// seed fixes Louvain's random moves so that the same input always yields the
// same communities.
const seed = 0x746f6f6c70726f66 // "toolprof"

// coUsage is the weighted co-usage graph over tool indices: the weight of an
// edge is the number of sessions that used both tools. It implements
// graph.WeightedUndirected with nodes and neighbours iterated in ID order
// (gonum's simple graphs iterate maps), so that Louvain sees the same order
// on every run.
type coUsage struct {
	nodes []graph.Node
	adj   map[int64][]int64 // sorted neighbour IDs
	w     map[[2]int64]float64
}

type toolNode int64

func (n toolNode) ID() int64 { return int64(n) }

type wedge struct {
	f, t graph.Node
	w    float64
}

func (e wedge) From() graph.Node         { return e.f }
func (e wedge) To() graph.Node           { return e.t }
func (e wedge) ReversedEdge() graph.Edge { return wedge{e.t, e.f, e.w} }
func (e wedge) Weight() float64          { return e.w }

func pairKey(x, y int64) [2]int64 {
	if x > y {
		x, y = y, x
	}
	return [2]int64{x, y}
}

// newCoUsage builds the graph over nodes (tool indices) from weighted
// demand sets; tools outside nodes are ignored.
func newCoUsage(nodes []int, demand []weighted) *coUsage {
	g := &coUsage{adj: map[int64][]int64{}, w: map[[2]int64]float64{}}
	in := map[int]bool{}
	for _, n := range nodes {
		in[n] = true
		g.nodes = append(g.nodes, toolNode(n))
	}
	slices.SortFunc(g.nodes, func(a, b graph.Node) int { return cmp.Compare(a.ID(), b.ID()) })
	var ts []int
	for _, d := range demand {
		ts = ts[:0]
		for _, t := range d.tools {
			if in[t] {
				ts = append(ts, t)
			}
		}
		for i, a := range ts {
			for _, b := range ts[i+1:] {
				k := pairKey(int64(a), int64(b))
				if g.w[k] == 0 {
					g.adj[k[0]] = append(g.adj[k[0]], k[1])
					g.adj[k[1]] = append(g.adj[k[1]], k[0])
				}
				g.w[k] += float64(d.weight)
			}
		}
	}
	for _, v := range g.adj {
		slices.Sort(v)
	}
	return g
}

func (g *coUsage) Node(id int64) graph.Node {
	if _, ok := slices.BinarySearchFunc(g.nodes, id, func(n graph.Node, id int64) int { return cmp.Compare(n.ID(), id) }); ok {
		return toolNode(id)
	}
	return nil
}

func (g *coUsage) Nodes() graph.Nodes { return iterator.NewOrderedNodes(g.nodes) }

func (g *coUsage) From(id int64) graph.Nodes {
	ns := g.adj[id]
	if len(ns) == 0 {
		return graph.Empty
	}
	out := make([]graph.Node, len(ns))
	for i, n := range ns {
		out[i] = toolNode(n)
	}
	return iterator.NewOrderedNodes(out)
}

func (g *coUsage) HasEdgeBetween(x, y int64) bool { return x != y && g.w[pairKey(x, y)] > 0 }

func (g *coUsage) Edge(u, v int64) graph.Edge { return g.WeightedEdgeBetween(u, v) }

func (g *coUsage) EdgeBetween(x, y int64) graph.Edge { return g.WeightedEdgeBetween(x, y) }

func (g *coUsage) WeightedEdge(u, v int64) graph.WeightedEdge { return g.WeightedEdgeBetween(u, v) }

func (g *coUsage) WeightedEdgeBetween(x, y int64) graph.WeightedEdge {
	if !g.HasEdgeBetween(x, y) {
		return nil
	}
	return wedge{toolNode(x), toolNode(y), g.w[pairKey(x, y)]}
}

func (g *coUsage) Weight(x, y int64) (float64, bool) {
	if x == y {
		return 0, true
	}
	w, ok := g.w[pairKey(x, y)]
	return w, ok
}

// weighted is a demand set (sorted tool indices) with its session count.
type weighted struct {
	tools  []int
	weight int
}

// partition splits the used tools into communities of co-used tools, never
// across upstreams: Louvain modularity at the given resolution runs on each
// upstream's own co-usage graph (seeded, so deterministic). Communities come
// out with sorted members, ordered by their smallest member.
func partition(nodes []int, upstreamOf []string, demand []weighted, resolution float64) [][]int {
	byUp := map[string][]int{}
	var ups []string
	for _, n := range nodes {
		u := upstreamOf[n]
		if _, ok := byUp[u]; !ok {
			ups = append(ups, u)
		}
		byUp[u] = append(byUp[u], n)
	}
	slices.Sort(ups)
	var out [][]int
	for _, u := range ups {
		g := newCoUsage(byUp[u], demand)
		reduced := community.Modularize(g, resolution, rand.NewPCG(seed, uint64(len(byUp[u]))))
		for _, c := range reduced.Communities() {
			m := make([]int, len(c))
			for i, n := range c {
				m[i] = int(n.ID())
			}
			slices.Sort(m)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return out
}
