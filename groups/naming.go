package groups

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/toolprof/toolprof/toolsearch"
)

// DefaultDescribeTools is how many tool names a group's description lists
// (most used first) before "… (N tools)": enough for a model to recognise
// the group, few enough that the enable_tools description stays small.
const DefaultDescribeTools = 8

// catchAllKey names the group of tools no derive session used.
const catchAllKey = "other"

// groupDraft is a group before naming: its tools (catalog indices, sorted)
// and whether it is an upstream's catch-all of unused tools.
type groupDraft struct {
	tools    []int
	catchAll bool
}

// namer names and describes groups deterministically from what their
// tools do (the distinctive words of their names and descriptions), their
// upstreams and how often the derive part used each tool.
type namer struct {
	names    []string // tool index -> name
	upstream []string // tool index -> upstream ("" when none)
	uses     []int    // tool index -> derive sessions using it
	describe int      // tool names listed per description
	isTool   map[string]bool
	words    []map[string]wordUse      // tool index -> stem -> how the tool uses it
	df       map[string]int            // stem -> tools using it
	upDF     map[string]map[string]int // upstream -> stem -> its tools using it
	upTools  map[string]int            // upstream -> its tools
}

// wordUse is how one tool uses a word: the surface form it writes, and
// whether its name holds the word (a name is the most deliberate
// description, so it weighs twice).
type wordUse struct {
	surface string
	inName  bool
}

// describeWords is how many distinctive words a description gives.
const describeWords = 3

// genericWords say what almost every tool does, not what a group is about:
// a name of them ("list", "get") would tell a model nothing.
var genericWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range toolsearch.Terms("get list create update delete add remove set read write search find manage fetch show " +
		"return tool use given specific detail information info new existing one all any id name option default based about more " +
		"each only must not no provide value data item result call method type string number optional required parameter current via " +
		"allow perform action operation request response user specified include support available multiple single give etc " +
		"other using across instead already particular level within without whether also another such same than first last " +
		"example note when where while which will would should can may might essential important just make sure like " +
		"very well good best large small great full cannot understand clear") {
		m[w] = true
	}
	return m
}()

func newNamer(names, upstream, descriptions []string, uses []int, describe int) *namer {
	nm := &namer{names: names, upstream: upstream, uses: uses, describe: describe, isTool: make(map[string]bool, len(names)),
		words: make([]map[string]wordUse, len(names)), df: map[string]int{}, upDF: map[string]map[string]int{}, upTools: map[string]int{}}
	for i, n := range names {
		nm.isTool[n] = true
		skip := map[string]bool{}
		for _, w := range toolsearch.Terms(upstream[i]) {
			skip[w] = true // the upstream names the group already
		}
		ws := map[string]wordUse{}
		add := func(text string, inName bool) {
			for _, sw := range surfaceWords(text) {
				if strings.ContainsAny(sw, "'’") || strings.Trim(sw, "0123456789") == "" || strings.HasSuffix(sw, "ly") {
					continue // a contraction, a number or an adverb: no name
				}
				stem := toolsearch.Terms(sw)
				if len(stem) != 1 || genericWords[stem[0]] || skip[stem[0]] || len(stem[0]) < 3 {
					continue
				}
				u, seen := ws[stem[0]]
				if !seen {
					u.surface = sw
				}
				u.inName = u.inName || inName
				ws[stem[0]] = u
			}
		}
		add(shortName(n), true)
		if i < len(descriptions) {
			add(descriptions[i], false)
		}
		if nm.upDF[upstream[i]] == nil {
			nm.upDF[upstream[i]] = map[string]int{}
		}
		nm.upTools[upstream[i]]++
		for w := range ws {
			nm.df[w]++
			nm.upDF[upstream[i]][w]++
		}
		nm.words[i] = ws
	}
	return nm
}

// surfaceWords splits text into lower-case words at anything not a letter
// or digit and at lower-to-upper case changes, as toolsearch.Terms does,
// but unstemmed: the form a name shows.
func surfaceWords(text string) []string {
	var out []string
	var cur []rune
	var prev rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsUpper(r):
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				flush()
			}
			cur = append(cur, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' || r == '’') && unicode.IsLetter(prev):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// distinctive returns the words that best say what g's tools do, best
// first, in the form the group's tools write them most: a word weighs by
// the share of the group's tools using it (twice in a name) times how
// rare it is in the catalog (inverse document frequency). A word more than
// half the catalog's tools, or half its upstream's, use tells one group
// from another of nothing, and is left out.
func (nm *namer) distinctive(g groupDraft) []string {
	weight := map[string]float64{}
	forms := map[string]map[string]int{}
	up := nm.upstream[g.tools[0]]
	for _, t := range g.tools {
		for w, u := range nm.words[t] {
			if 2*nm.df[w] > len(nm.names) || 2*nm.upDF[up][w] > nm.upTools[up] || !u.inName && nm.df[w] < 2 {
				continue // everywhere, or a word of one description's prose
			}
			x := 1.0
			if u.inName {
				x = 2
			}
			weight[w] += x
			if forms[w] == nil {
				forms[w] = map[string]int{}
			}
			forms[w][u.surface]++
		}
	}
	n := float64(len(nm.names))
	score := make(map[string]float64, len(weight))
	stems := make([]string, 0, len(weight))
	for w, x := range weight {
		score[w] = x / float64(len(g.tools)) * math.Log((n+1)/float64(nm.df[w]))
		stems = append(stems, w)
	}
	slices.SortFunc(stems, func(a, b string) int {
		return cmp.Or(cmp.Compare(score[b], score[a]), strings.Compare(a, b))
	})
	out := make([]string, len(stems))
	for i, w := range stems {
		best := ""
		for f, c := range forms[w] {
			if b := forms[w][best]; best == "" || c > b || c == b && (len(f) < len(best) || len(f) == len(best) && f < best) {
				best = f
			}
		}
		out[i] = best
	}
	return out
}

// byUse orders tool indices most used first, then by name.
func (nm *namer) byUse(tools []int) []int {
	out := slices.Clone(tools)
	slices.SortStableFunc(out, func(a, b int) int {
		if c := cmp.Compare(nm.uses[b], nm.uses[a]); c != 0 {
			return c
		}
		return strings.Compare(nm.names[a], nm.names[b])
	})
	return out
}

// keys are the candidate readable parts of a group's name, best first:
// a lone tool's short name (beside its upstream's), else its most
// distinctive word, then pairs and the next words, so that groups
// sharing their best word still get names of their own; then, for tools
// whose words say nothing distinctive, the common word prefix of their
// short names ("update_reservation" for update_reservation_*) or the most
// used tool's short name.
func (nm *namer) keys(g groupDraft) []string {
	if g.catchAll {
		return []string{catchAllKey}
	}
	var out []string
	if t := g.tools[0]; len(g.tools) == 1 && nm.upstream[t] != "" {
		out = append(out, shortName(nm.names[t])) // a lone tool's name says what it does
	}
	if w := nm.distinctive(g); len(w) > 0 {
		w = w[:min(len(w), 4)]
		out = append(out, w[0])
		for i := 1; i < len(w); i++ {
			out = append(out, w[0]+"_"+w[i])
		}
		for i := 1; i < len(w); i++ {
			out = append(out, w[i])
			for j := i + 1; j < len(w); j++ {
				out = append(out, w[i]+"_"+w[j])
			}
		}
	}
	ordered := nm.byUse(g.tools)
	if len(ordered) > 1 {
		var common []string
		for i, t := range ordered {
			words := strings.FieldsFunc(shortName(nm.names[t]), func(r rune) bool { return r == '_' || r == '-' })
			if i == 0 {
				common = words
				continue
			}
			n := 0
			for n < len(common) && n < len(words) && common[n] == words[n] {
				n++
			}
			common = common[:n]
		}
		if p := strings.Join(common, "_"); len(p) >= 3 {
			out = append(out, p)
		}
	}
	return append(out, shortName(nm.names[ordered[0]]))
}

// sanitise keeps the characters a profiles file accepts in a name.
func sanitise(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	s = strings.TrimLeft(string(b), "_-.")
	if s == "" {
		s = "group"
	}
	return s
}

// name returns the groups' names, in the drafts' order. A group holding all
// of its upstream's grouped tools is named after the upstream; otherwise
// the upstream and the group's first key no earlier group took, joined by
// "-" (the key alone for tools without an upstream). A name equal to a
// tool name gets "-group"; when every key is taken, the first gets "-2",
// "-3", ... in draft order.
func (nm *namer) name(drafts []groupDraft) []string {
	perUpstream := map[string]int{}
	for _, g := range drafts {
		perUpstream[nm.upstream[g.tools[0]]]++
	}
	taken := map[string]bool{}
	out := make([]string, len(drafts))
	for i, g := range drafts {
		up := nm.upstream[g.tools[0]]
		var bases []string
		for _, k := range nm.keys(g) {
			base := k
			switch {
			case up != "" && perUpstream[up] == 1 && !g.catchAll:
				base = up
			case up != "":
				base = up + "-" + k
			}
			base = sanitise(base)
			if nm.isTool[base] {
				base += "-group"
			}
			bases = append(bases, base)
		}
		name := ""
		for _, b := range bases {
			if !taken[nameStem(b)] && !nm.isTool[b] {
				name = b
				break
			}
		}
		for n := 2; name == ""; n++ {
			if c := fmt.Sprintf("%s-%d", bases[0], n); !taken[c] && !nm.isTool[c] {
				name = c
			}
		}
		taken[name], taken[nameStem(name)] = true, true
		out[i] = name
	}
	return out
}

// nameStem is a name's words, stemmed: "issues" and "issue" are one
// name to a reader.
func nameStem(name string) string { return strings.Join(toolsearch.Terms(name), "_") }

// description is a one-line description built from the tools: the
// upstream (or "tools"), the words that best say what they do, up to
// describe short names most used first, and the count:
// "gorilla_file_system (directory, file): cd, ls, mkdir, … (18 tools)". A
// catch-all says its tools were not used in the measured sessions.
func (nm *namer) description(g groupDraft) string {
	up := nm.upstream[g.tools[0]]
	label := up
	if label == "" {
		label = "tools"
	}
	if g.catchAll {
		label = "not used in measured sessions, " + label
	}
	ordered := nm.byUse(g.tools)
	if g.catchAll {
		ordered = slices.Clone(g.tools) // no usage to rank by: catalog order
		slices.SortFunc(ordered, func(a, b int) int { return strings.Compare(nm.names[a], nm.names[b]) })
	}
	shown := ordered[:min(len(ordered), nm.describe)]
	parts := make([]string, len(shown))
	for i, t := range shown {
		parts[i] = shortName(nm.names[t])
	}
	list := strings.Join(parts, ", ")
	if len(shown) < len(ordered) {
		list += ", …"
	}
	noun := "tools"
	if len(g.tools) == 1 {
		noun = "tool"
	}
	if w := nm.distinctive(g); len(w) > 0 {
		label += " (" + strings.Join(w[:min(len(w), describeWords)], ", ") + ")"
	}
	return fmt.Sprintf("%s: %s (%d %s)", label, list, len(g.tools), noun)
}
