// Package toolsearch ranks tools for a search query: BM25 over each tool's
// name, description and parameter names, plus priors measured from
// sessions (how often a tool is used, and how often it is used with the
// tools a session already called).
//
// It imports nothing beyond the standard library, so both the gateway,
// which answers find_tools with it, and the analysis side, which learns
// the priors (Learn) and evaluates search (profiler evaluate), use the
// same ranking.
//
// # Score
//
// For a query q and the tools a session already used U, tool t scores
//
//	Text·bm25(q, t)/max bm25(q, ·) + Popularity·pop(t) + CoUse·max_{u∈U} co(u, t)
//	  + Feedback·max_{m∈M} bm25(q, m)/bm25(q, m₁)·co(m, t)
//
// where pop(t) is the share of learning sessions that used t, co(u, t)
// the Jaccard index of the sessions using u and those using t (Priors),
// and M the query's FeedbackSeeds best text matches m₁, m₂, … among all
// indexed tools, used or filtered out ones too: pseudo-relevance feedback
// from measured co-use, which finds the companions a request never names
// (a log-in before a send, a zipcode look-up before a distance estimate);
// a search for a session of profile P (SearchAs) adds Demand·dem_P(t),
// the share of the learning sessions served P that used t: the profile's
// own measured demand, which may differ from everyone's.
// The text part is normalised to [0, 1] by the best match among the
// candidates, so the weights mean the same for short and long queries.
// Ties break by name, among the feedback seeds too: the same index, query
// and history always give the same order.
//
// An Index is immutable once built and safe for concurrent use.
package toolsearch

import (
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Doc is what the index reads of one tool.
type Doc struct {
	Name        string
	Description string
	Params      []string // the input schema's property names
}

// Priors are measured from sessions; the zero value ranks by text alone.
type Priors struct {
	// Tools maps a tool to the share of sessions that used it (0 to 1).
	Tools map[string]float64
	// Pairs maps a tool to the tools used with it and their Jaccard index
	// (sessions using both over sessions using either), in both
	// directions.
	Pairs map[string]map[string]float64
	// Demand maps a profile to the share of its sessions that used each
	// tool (0 to 1).
	Demand map[string]map[string]float64
}

// Weights weigh the parts of a score.
type Weights struct {
	Text, Popularity, CoUse, Demand float64
	// Feedback weighs co-use with the query's best text matches (Search):
	// the companions a request's words never name.
	Feedback float64
}

// FeedbackSeeds is how many of the query's best text matches a search
// expands by their co-used tools: on the validation sessions
// DefaultWeights were tuned on, 1, 2 and 5 missed more.
const FeedbackSeeds = 3

// DefaultWeights are used when an Index is built with zero Weights: on a
// validation part of the learning sessions of bfcl-multi-turn and
// tau-airline (never their held-out part), over a grid of 0 to 4, the
// weights with which a search arm at limit 9 misses a needed tool in the
// fewest sessions while recall@5 meets its targets (evaluate's
// TestEvalDefaultWeights). Demand weighs as Popularity: no trace here
// records sessions served a profile to tune it on.
func DefaultWeights() Weights {
	return Weights{Text: 1, Popularity: 3, CoUse: 2, Demand: 3, Feedback: 1.5}
}

// BM25 parameters (Robertson's usual values).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Index ranks a fixed set of tools. A search reads it by term and by
// tool number, without building maps, so that it costs little beside the
// answer it serves.
type Index struct {
	names    []string
	sorted   []string // names in order, for Names
	byName   map[string]int
	termIDs  map[string]int
	postings [][]posting // per term: the tools holding it
	idf      []float64   // per term
	norm     []float64   // per tool: BM25's length normalisation
	pop      []float64
	pairs    [][]coUse            // per tool: co-used tools
	demand   map[string][]float64 // per profile, per tool: share of its sessions
	weights  Weights
}

// posting is one tool holding a term, f times.
type posting struct {
	tool int
	f    float64
}

// coUse is a co-used tool and the Jaccard index of the two.
type coUse struct {
	tool   int
	weight float64
}

// New builds an index over docs (names distinct; a repeated name keeps the
// first) with priors p (nil: none) and weights w (zero: DefaultWeights).
func New(docs []Doc, p *Priors, w Weights) *Index {
	if w == (Weights{}) {
		w = DefaultWeights()
	}
	ix := &Index{byName: make(map[string]int, len(docs)), termIDs: map[string]int{}, weights: w}
	var lengths []int
	var avgLen float64
	for _, d := range docs {
		if _, dup := ix.byName[d.Name]; dup || d.Name == "" {
			continue
		}
		tool := len(ix.names)
		ix.byName[d.Name] = tool
		ix.names = append(ix.names, d.Name)
		terms := docTerms(d)
		tf := make(map[string]int, len(terms))
		for _, t := range terms {
			tf[t]++
		}
		for _, t := range slices.Sorted(maps.Keys(tf)) {
			id, ok := ix.termIDs[t]
			if !ok {
				id = len(ix.postings)
				ix.termIDs[t] = id
				ix.postings = append(ix.postings, nil)
			}
			ix.postings[id] = append(ix.postings[id], posting{tool: tool, f: float64(tf[t])})
		}
		lengths = append(lengths, len(terms))
		avgLen += float64(len(terms))
	}
	ix.sorted = slices.Sorted(slices.Values(ix.names))
	n := float64(len(ix.names))
	if n > 0 {
		avgLen /= n
	}
	ix.idf = make([]float64, len(ix.postings))
	for id, ps := range ix.postings {
		d := float64(len(ps))
		ix.idf[id] = math.Log(1 + (n-d+0.5)/(d+0.5))
	}
	ix.norm = make([]float64, len(ix.names))
	for i, l := range lengths {
		ix.norm[i] = bm25K1 * (1 - bm25B + bm25B*float64(l)/max(avgLen, 1))
	}
	ix.pop = make([]float64, len(ix.names))
	ix.pairs = make([][]coUse, len(ix.names))
	if p != nil && len(p.Demand) > 0 {
		ix.demand = make(map[string][]float64, len(p.Demand))
		for profile, m := range p.Demand {
			d := make([]float64, len(ix.names))
			for i, name := range ix.names {
				d[i] = m[name]
			}
			ix.demand[profile] = d
		}
	}
	if p != nil {
		for i, name := range ix.names {
			ix.pop[i] = p.Tools[name]
			for other, j := range p.Pairs[name] {
				if k, ok := ix.byName[other]; ok && k != i {
					ix.pairs[i] = append(ix.pairs[i], coUse{tool: k, weight: j})
				}
			}
		}
	}
	return ix
}

// Len returns the number of tools indexed.
func (ix *Index) Len() int { return len(ix.names) }

// Hit is one ranked tool.
type Hit struct {
	Name  string
	Score float64
}

// Search returns up to limit tools for query, best first, given the tools
// the session already used (used; unknown names are ignored) and a filter
// (nil: every tool) that a returned tool must pass. Tools the filter
// rejects never appear, whatever their score, and neither do the used
// ones: the session has their definitions already, and a search is for
// the tools it lacks.
func (ix *Index) Search(query string, used []string, limit int, allow func(name string) bool) []Hit {
	return ix.SearchAs("", query, used, limit, allow)
}

// SearchAs is Search for a session served profile: the profile's measured
// demand, when the priors hold it, adds to each score.
func (ix *Index) SearchAs(profile, query string, used []string, limit int, allow func(name string) bool) []Hit {
	if limit <= 0 || len(ix.names) == 0 {
		return nil
	}
	q := uniq(Terms(query))
	var usedIdx []int
	for _, u := range used {
		if i, ok := ix.byName[u]; ok && !slices.Contains(usedIdx, i) {
			usedIdx = append(usedIdx, i)
		}
	}
	text := ix.bm25(q)
	allowed := make([]bool, len(ix.names))
	var best float64
	for i := range ix.names {
		if allowed[i] = allow == nil || allow(ix.names[i]); allowed[i] {
			best = max(best, text[i])
		}
	}
	seeds := ix.seeds(text)
	// Each tool's best co-use with the used tools and with the seeds,
	// spread from the few tools' pairs rather than looked up per tool.
	co := make([]float64, len(ix.names))
	for _, u := range usedIdx {
		for _, p := range ix.pairs[u] {
			co[p.tool] = max(co[p.tool], p.weight)
		}
	}
	fb := make([]float64, len(ix.names))
	for _, sd := range seeds {
		for _, p := range ix.pairs[sd.i] {
			fb[p.tool] = max(fb[p.tool], sd.share*p.weight)
		}
	}
	// The best limit hits, kept sorted by insertion: limit is small, and a
	// full sort of every tool would cost most of a search.
	hits := make([]Hit, 0, min(limit, len(ix.names)))
	w := ix.weights
	dem := ix.demand[profile]
	for i, name := range ix.names {
		if !allowed[i] || slices.Contains(usedIdx, i) {
			continue
		}
		s := w.Popularity * ix.pop[i]
		if dem != nil {
			s += w.Demand * dem[i]
		}
		if best > 0 {
			s += w.Text * text[i] / best
		}
		s += w.CoUse * co[i]
		s += w.Feedback * fb[i]
		h := Hit{Name: name, Score: s}
		if len(hits) == limit && better(hits[limit-1], h) {
			continue
		}
		at, _ := slices.BinarySearchFunc(hits, h, func(a, b Hit) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		if len(hits) < limit {
			hits = append(hits, Hit{})
		}
		copy(hits[at+1:], hits[at:len(hits)-1])
		hits[at] = h
	}
	return hits
}

// seed is one of a query's best text matches: a tool and its text score
// over the best tool's.
type seed struct {
	i     int
	share float64
}

// seeds returns the FeedbackSeeds tools with the best text scores, among
// every indexed tool (one the filter rejects or the session used still
// tells which tools go with the request), ties by name; none when no tool
// matches the query.
func (ix *Index) seeds(text []float64) []seed {
	var out []seed
	for i, s := range text {
		if s <= 0 {
			continue
		}
		at := slices.IndexFunc(out, func(o seed) bool {
			return s > text[o.i] || s == text[o.i] && ix.names[i] < ix.names[o.i]
		})
		if at < 0 {
			at = len(out)
		}
		if at < FeedbackSeeds {
			out = slices.Insert(out, at, seed{i: i, share: s})
			out = out[:min(len(out), FeedbackSeeds)]
		}
	}
	for k := range out {
		out[k].share /= text[out[0].i]
	}
	return out
}

// better reports whether a ranks before b: higher score, then name.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

// bm25 returns each tool's BM25 score for the query terms q, summed in
// q's order.
func (ix *Index) bm25(q []string) []float64 {
	s := make([]float64, len(ix.names))
	for _, t := range q {
		id, ok := ix.termIDs[t]
		if !ok {
			continue
		}
		idf := ix.idf[id]
		for _, p := range ix.postings[id] {
			s[p.tool] += idf * p.f * (bm25K1 + 1) / (p.f + ix.norm[p.tool])
		}
	}
	return s
}

// docTerms are a tool's terms: its name's words count twice (a name is
// the tool's most deliberate description), then its description's and
// its parameter names'.
func docTerms(d Doc) []string {
	name := Terms(d.Name)
	out := append(slices.Clone(name), name...)
	out = append(out, Terms(d.Description)...)
	for _, p := range d.Params {
		out = append(out, Terms(p)...)
	}
	return out
}

func uniq(ts []string) []string {
	slices.Sort(ts)
	return slices.Compact(ts)
}

// Terms splits text into lower-case, lightly stemmed words: at anything
// not a letter or digit and at lower-to-upper case changes
// (listIssues, get_me, repo.list), stop words dropped.
func Terms(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := stem(string(cur))
		cur = cur[:0]
		if len(w) > 1 && !stopWords[w] {
			out = append(out, w)
		}
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsUpper(r):
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				flush()
			}
			cur = append(cur, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// stem strips common English inflections, enough to match "files" with
// "file" and "listing" with "list"; it never leaves fewer than three
// letters.
func stem(w string) string {
	for _, suf := range []string{"ies", "ing", "ed", "es", "s"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			base := w[:len(w)-len(suf)]
			switch suf {
			case "ies":
				return base + "y"
			case "es":
				// "boxes" -> "box", but "files" -> "file"
				if strings.HasSuffix(base, "x") || strings.HasSuffix(base, "sh") || strings.HasSuffix(base, "ch") || strings.HasSuffix(base, "ss") {
					return base
				}
				return w[:len(w)-1]
			case "s":
				if strings.HasSuffix(w, "ss") {
					return w
				}
			}
			return base
		}
	}
	return w
}

var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "for": true, "from": true, "have": true, "how": true, "if": true, "in": true,
	"into": true, "is": true, "it": true, "its": true, "me": true, "my": true, "of": true, "on": true,
	"or": true, "please": true, "so": true, "that": true, "the": true, "their": true, "them": true,
	"then": true, "there": true, "this": true, "to": true, "we": true, "what": true, "when": true,
	"which": true, "will": true, "with": true, "would": true, "you": true, "your": true, "i": true,
	"thi": true, "ha": true, "wa": true, "also": true, "want": true, "like": true, "could": true,
}

// Has reports whether the index holds tool name.
func (ix *Index) Has(name string) bool {
	_, ok := ix.byName[name]
	return ok
}
