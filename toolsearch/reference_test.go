package toolsearch

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// referenceIndex scores as Index did with a map per tool and per prior,
// looked up per tool on each search: what the term and tool numbers of
// Index must reproduce bit for bit.
type referenceIndex struct {
	names  []string
	byName map[string]int
	tf     []map[string]int
	length []int
	avgLen float64
	idf    map[string]float64
	pop    []float64
	pairs  []map[int]float64
	demand map[string][]float64
	w      Weights
}

func newReference(docs []Doc, p *Priors) *referenceIndex {
	ix := &referenceIndex{byName: map[string]int{}, idf: map[string]float64{}, w: DefaultWeights()}
	df := map[string]int{}
	for _, d := range docs {
		if _, dup := ix.byName[d.Name]; dup || d.Name == "" {
			continue
		}
		ix.byName[d.Name] = len(ix.names)
		ix.names = append(ix.names, d.Name)
		terms := docTerms(d)
		tf := map[string]int{}
		for _, t := range terms {
			tf[t]++
		}
		for t := range tf {
			df[t]++
		}
		ix.tf = append(ix.tf, tf)
		ix.length = append(ix.length, len(terms))
		ix.avgLen += float64(len(terms))
	}
	n := float64(len(ix.names))
	if n > 0 {
		ix.avgLen /= n
	}
	for t, d := range df {
		ix.idf[t] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	ix.pop = make([]float64, len(ix.names))
	ix.pairs = make([]map[int]float64, len(ix.names))
	ix.demand = map[string][]float64{}
	for profile, m := range p.Demand {
		d := make([]float64, len(ix.names))
		for i, name := range ix.names {
			d[i] = m[name]
		}
		ix.demand[profile] = d
	}
	for i, name := range ix.names {
		ix.pop[i] = p.Tools[name]
		for other, j := range p.Pairs[name] {
			if k, ok := ix.byName[other]; ok && k != i {
				if ix.pairs[i] == nil {
					ix.pairs[i] = map[int]float64{}
				}
				ix.pairs[i][k] = j
			}
		}
	}
	return ix
}

func (ix *referenceIndex) bm25(i int, q []string) float64 {
	var s float64
	tf, norm := ix.tf[i], bm25K1*(1-bm25B+bm25B*float64(ix.length[i])/max(ix.avgLen, 1))
	for _, t := range q {
		f := float64(tf[t])
		if f == 0 {
			continue
		}
		s += ix.idf[t] * f * (bm25K1 + 1) / (f + norm)
	}
	return s
}

// scores are every allowed, unused tool's score, by name.
func (ix *referenceIndex) scores(profile, query string, used []string, allow func(string) bool) map[string]float64 {
	q := uniq(Terms(query))
	var usedIdx []int
	for _, u := range used {
		if i, ok := ix.byName[u]; ok && !slices.Contains(usedIdx, i) {
			usedIdx = append(usedIdx, i)
		}
	}
	text := make([]float64, len(ix.names))
	var best float64
	for i := range ix.names {
		text[i] = ix.bm25(i, q)
		if allow(ix.names[i]) {
			best = max(best, text[i])
		}
	}
	seeds := (&Index{names: ix.names}).seeds(text)
	out := map[string]float64{}
	for i, name := range ix.names {
		if !allow(name) || slices.Contains(usedIdx, i) {
			continue
		}
		s := ix.w.Popularity * ix.pop[i]
		if dem := ix.demand[profile]; dem != nil {
			s += ix.w.Demand * dem[i]
		}
		if best > 0 {
			s += ix.w.Text * text[i] / best
		}
		var co float64
		for _, u := range usedIdx {
			co = max(co, ix.pairs[u][i])
		}
		s += ix.w.CoUse * co
		var fb float64
		for _, sd := range seeds {
			fb = max(fb, sd.share*ix.pairs[sd.i][i])
		}
		s += ix.w.Feedback * fb
		out[name] = s
	}
	return out
}

// TestSearchMatchesReference checks that every hit of a search, over
// random catalogs, priors, queries, histories and filters, is the tool
// and score the per-tool maps give, ranked by score then name.
func TestSearchMatchesReference(t *testing.T) {
	words := []string{"list", "files", "read", "send", "message", "user", "item", "thing", "report", "result", "delete", "the", "Repo", "issues", "3", "42"}
	rapid.Check(t, func(t *rapid.T) {
		sentence := func(label string) string {
			return fmt.Sprint(rapid.SliceOfN(rapid.SampledFrom(words), 0, 8).Draw(t, label))
		}
		n := rapid.IntRange(0, 30).Draw(t, "tools")
		var docs []Doc
		var toolNames []string
		for i := range n {
			name := fmt.Sprintf("%s_%s%d", rapid.SampledFrom(words).Draw(t, "verb"), rapid.SampledFrom(words).Draw(t, "noun"), i%7)
			toolNames = append(toolNames, name)
			docs = append(docs, Doc{Name: name, Description: sentence("description"), Params: rapid.SliceOfN(rapid.SampledFrom(words), 0, 3).Draw(t, "params")})
		}
		p := &Priors{Tools: map[string]float64{}, Pairs: map[string]map[string]float64{}, Demand: map[string]map[string]float64{"prof": {}}}
		weight := rapid.SampledFrom([]float64{0, 0.05, 0.2, 0.5, 1})
		if n > 0 {
			some := rapid.SliceOfN(rapid.SampledFrom(toolNames), 0, 2*n)
			for _, a := range some.Draw(t, "popular") {
				p.Tools[a] = weight.Draw(t, "pop")
			}
			for _, a := range some.Draw(t, "demanded") {
				p.Demand["prof"][a] = weight.Draw(t, "demand")
			}
			for _, a := range some.Draw(t, "paired") {
				b := rapid.SampledFrom(toolNames).Draw(t, "pair")
				j := weight.Draw(t, "jaccard")
				for _, d := range [][2]string{{a, b}, {b, a}} {
					if p.Pairs[d[0]] == nil {
						p.Pairs[d[0]] = map[string]float64{}
					}
					p.Pairs[d[0]][d[1]] = j
				}
			}
		}
		var used []string
		if n > 0 {
			used = rapid.SliceOfN(rapid.SampledFrom(append(toolNames, "unknown")), 0, 4).Draw(t, "used")
		}
		denied := map[string]bool{}
		if n > 0 {
			for _, d := range rapid.SliceOfN(rapid.SampledFrom(toolNames), 0, n/2).Draw(t, "denied") {
				denied[d] = true
			}
		}
		allow := func(name string) bool { return !denied[name] }
		profile := rapid.SampledFrom([]string{"", "prof", "other"}).Draw(t, "profile")
		query := sentence("query")
		limit := rapid.IntRange(1, 40).Draw(t, "limit")

		want := newReference(docs, p).scores(profile, query, used, allow)
		var ranked []Hit
		for name, s := range want {
			ranked = append(ranked, Hit{Name: name, Score: s})
		}
		slices.SortFunc(ranked, func(a, b Hit) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		ranked = ranked[:min(limit, len(ranked))]
		got := New(docs, p, Weights{}).SearchAs(profile, query, used, limit, allow)
		if len(got) != len(ranked) {
			t.Fatalf("SearchAs = %v; want %v", got, ranked)
		}
		for i := range got {
			if got[i] != ranked[i] || math.Float64bits(got[i].Score) != math.Float64bits(ranked[i].Score) {
				t.Fatalf("hit %d = %+v; want %+v (all: %v; want %v)", i, got[i], ranked[i], got, ranked)
			}
		}
	})
}
