package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

var docs = []toolsearch.Doc{
	{Name: "fs.ls", Description: "List the files of a directory.", Params: []string{"path"}},
	{Name: "fs.mv", Description: "Move a file to another directory.", Params: []string{"source", "destination"}},
	{Name: "fs.cat", Description: "Print a file's contents.", Params: []string{"file_name"}},
	{Name: "mail.send_message", Description: "Send a message to a user.", Params: []string{"receiver_id", "message"}},
	{Name: "mail.listInbox", Description: "Show received messages.", Params: nil},
}

func names(hits []toolsearch.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

func TestSearch(t *testing.T) {
	priors := &toolsearch.Priors{
		Tools: map[string]float64{"fs.ls": 0.3, "fs.cat": 0.1, "mail.listInbox": 0.2},
		Pairs: map[string]map[string]float64{
			"fs.ls":          {"fs.cat": 0.8},
			"fs.cat":         {"fs.ls": 0.8},
			"mail.listInbox": {"mail.send_message": 0.9},
		},
	}
	for _, tc := range []struct {
		name   string
		priors *toolsearch.Priors
		query  string
		used   []string
		limit  int
		allow  func(string) bool
		want   []string
	}{
		{"text decides", nil, "move the report to the archive directory", nil, 1, nil, []string{"fs.mv"}},
		{"parameter names count", nil, "who is the receiver", nil, 1, nil, []string{"mail.send_message"}},
		{"camel case and stems", nil, "inbox listing", nil, 1, nil, []string{"mail.listInbox"}},
		{"no words: names order ties", nil, "", nil, 2, nil, []string{"fs.cat", "fs.ls"}},
		{"popularity without words", priors, "", nil, 2, nil, []string{"fs.ls", "mail.listInbox"}},
		{"co-usage with the history", priors, "", []string{"mail.listInbox"}, 1, nil, []string{"mail.send_message"}},
		{"used tools are not returned", priors, "list files", []string{"fs.ls"}, 1, nil, []string{"fs.cat"}},
		{"filter excludes whatever the score", nil, "list the files", nil, 2, func(n string) bool { return n != "fs.ls" }, []string{"mail.listInbox", "fs.cat"}},
		{"limit above the tools", nil, "file", nil, 50, nil, []string{"fs.cat", "fs.ls", "fs.mv", "mail.listInbox", "mail.send_message"}},
		{"zero limit", nil, "file", nil, 0, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := toolsearch.New(docs, tc.priors, toolsearch.Weights{})
			if got := names(ix.Search(tc.query, tc.used, tc.limit, tc.allow)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Search(%q, %v) = %v, want %v", tc.query, tc.used, got, tc.want)
			}
		})
	}
}

// TestSearchAsProfileDemand: a profile's measured demand lifts its tools
// for its own sessions only, and ranks the same on every search.
func TestSearchAsProfileDemand(t *testing.T) {
	priors := &toolsearch.Priors{Tools: map[string]float64{"fs.ls": 0.3}, Demand: map[string]map[string]float64{"mail": {"mail.send_message": 0.9}}}
	ix := toolsearch.New(docs, priors, toolsearch.Weights{})
	for _, tc := range []struct {
		profile string
		want    []string
	}{
		{"mail", []string{"mail.send_message", "fs.ls"}},
		{"files", []string{"fs.ls", "fs.cat"}},
		{"", []string{"fs.ls", "fs.cat"}},
	} {
		want := names(ix.SearchAs(tc.profile, "", nil, 2, nil))
		if !reflect.DeepEqual(want, tc.want) {
			t.Fatalf("SearchAs(%q) = %v, want %v", tc.profile, want, tc.want)
		}
		for range 3 {
			if got := names(ix.SearchAs(tc.profile, "", nil, 2, nil)); !reflect.DeepEqual(got, want) {
				t.Fatalf("SearchAs(%q) = %v, then %v", tc.profile, want, got)
			}
		}
	}
}

func TestLearnDemand(t *testing.T) {
	got := toolsearch.LearnDemand(map[string][][]string{"z": {{"b"}, {"a", "b"}, {}}, "a": {{"c"}}, "empty": {{}}})
	want := []toolsearch.ProfileDemand{
		{Name: "a", Sessions: 1, Tools: []toolsearch.ToolWeight{{"c", 1}}},
		{Name: "z", Sessions: 2, Tools: []toolsearch.ToolWeight{{"a", 0.5}, {"b", 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LearnDemand = %+v, want %+v", got, want)
	}
	p := toolsearch.Learned{Profiles: got}.Priors()
	if p.Demand["z"]["a"] != 0.5 || p.Demand["a"]["c"] != 1 {
		t.Fatalf("Priors().Demand = %+v", p.Demand)
	}
}

// TestSearchDeterministic builds the index from the documents in shuffled
// orders and searches concurrently: the answers are the same, though
// every tool matches the query as well and so is as good a feedback seed.
func TestSearchDeterministic(t *testing.T) {
	var many []toolsearch.Doc
	priors := &toolsearch.Priors{Pairs: map[string]map[string]float64{}}
	for i := range 300 {
		name, other := fmt.Sprintf("t%03d", i), fmt.Sprintf("t%03d", (i+150)%300)
		many = append(many, toolsearch.Doc{Name: name, Description: fmt.Sprintf("tool number %d handles file %d", i%7, i%11)})
		priors.Pairs[name] = map[string]float64{other: 0.5}
	}
	const query = "file tool handles"
	want := names(toolsearch.New(many, priors, toolsearch.Weights{}).Search(query, nil, 20, nil))
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(many)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		ix := toolsearch.New(shuffled, priors, toolsearch.Weights{})
		done := make(chan []string, 4)
		for range 4 {
			go func() { done <- names(ix.Search(query, nil, 20, nil)) }()
		}
		for range 4 {
			if got := <-done; !reflect.DeepEqual(got, want) {
				t.Fatalf("order depends on input order:\n%v\n%v", got, want)
			}
		}
	}
}

func TestTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"listIssues":              {"list", "issue"},
		"get_me":                  {"get"},
		"github__create_branch":   {"github", "create", "branch"},
		"Files in the boxes, ok?": {"file", "box", "ok"},
		"class":                   {"class"},
	} {
		if got := toolsearch.Terms(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Terms(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParamNames(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{}, "a": map[string]any{}}}
	if got := toolsearch.ParamNames(schema); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("ParamNames = %v", got)
	}
	if got := toolsearch.ParamNames(json.RawMessage(`{"type":"object"}`)); got != nil {
		t.Fatalf("no properties: %v", got)
	}
}

func TestLearn(t *testing.T) {
	sessions := [][]string{{"a", "b"}, {"b", "a", "a"}, {"a", "c"}, {}, {"d"}}
	got := toolsearch.Learn(sessions, 1)
	want := toolsearch.Learned{
		Sessions: 4,
		Tools:    []toolsearch.ToolWeight{{"a", 0.75}, {"b", 0.5}, {"c", 0.25}, {"d", 0.25}},
		// a's best partner is b (2/3), b's is a, c's is a (1/3): kept.
		Pairs: []toolsearch.Pair{{A: "a", B: "b", Weight: 0.6667}, {A: "a", B: "c", Weight: 0.3333}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Learn =\n%+v\nwant\n%+v", got, want)
	}
	p := got.Priors()
	if p.Pairs["b"]["a"] != 0.6667 || p.Pairs["a"]["b"] != 0.6667 || p.Tools["d"] != 0.25 {
		t.Fatalf("Priors = %+v", p)
	}
}

// BenchmarkSearch500 searches a 500-tool catalog.
func BenchmarkSearch500(b *testing.B) {
	var many []toolsearch.Doc
	for i := range 500 {
		many = append(many, toolsearch.Doc{Name: fmt.Sprintf("server%d__tool_%d", i%20, i), Description: fmt.Sprintf("Does thing %d with item %d and reports the %d result", i%13, i%17, i%5), Params: []string{"id", fmt.Sprintf("p%d", i%9)}})
	}
	ix := toolsearch.New(many, nil, toolsearch.Weights{})
	b.ReportAllocs()
	for b.Loop() {
		ix.Search("report the result of thing 3 for item 4", []string{"server1__tool_1"}, 5, nil)
	}
}

// TestSearchFeedback: a search expands by the tools co-used with the
// query's best text matches, so a companion the words never name (a
// zipcode look-up before a distance estimate) ranks above a merely
// popular tool; the expansion weighs by how well each seed matched.
func TestSearchFeedback(t *testing.T) {
	docs := []toolsearch.Doc{
		{Name: "car.estimate_distance", Description: "Estimate the distance between two places.", Params: []string{"from_zip", "to_zip"}},
		{Name: "car.get_zipcode", Description: "Look up the zipcode of a city.", Params: []string{"city"}},
		{Name: "fs.cd", Description: "Change the working directory.", Params: []string{"folder"}},
		{Name: "mail.login", Description: "Log in to the mail service.", Params: []string{"user_id"}},
		{Name: "mail.send", Description: "Send a message to a user.", Params: []string{"receiver_id", "message"}},
	}
	priors := &toolsearch.Priors{
		Tools: map[string]float64{"fs.cd": 0.5, "car.estimate_distance": 0.1, "car.get_zipcode": 0.1, "mail.login": 0.1, "mail.send": 0.1},
		Pairs: map[string]map[string]float64{
			"car.estimate_distance": {"car.get_zipcode": 0.9},
			"car.get_zipcode":       {"car.estimate_distance": 0.9},
			"mail.send":             {"mail.login": 0.8},
			"mail.login":            {"mail.send": 0.8},
		},
	}
	with := toolsearch.Weights{Text: 1, Popularity: 1, CoUse: 1, Feedback: 1}
	without, noCoUse := with, with
	without.Feedback, noCoUse.CoUse = 0, 0
	seedsOnly := func(n string) bool { return n != "mail.send" && n != "car.estimate_distance" }
	for _, tc := range []struct {
		name  string
		w     toolsearch.Weights
		query string
		used  []string
		allow func(string) bool
		want  []string
	}{
		{"companion of the best match", with, "estimate the distance from Rivermist", nil, nil, []string{"car.estimate_distance", "car.get_zipcode"}},
		{"no feedback: the popular tool", without, "estimate the distance from Rivermist", nil, nil, []string{"car.estimate_distance", "fs.cd"}},
		{"a used seed still expands", noCoUse, "estimate the distance from Rivermist", []string{"car.estimate_distance"}, nil, []string{"car.get_zipcode", "fs.cd"}},
		{"a filtered seed still expands", with, "send a message to Bob", nil, func(n string) bool { return n != "mail.send" }, []string{"mail.login", "fs.cd"}},
		{"the better match's companion first", with, "send a message, then estimate", nil, seedsOnly, []string{"mail.login", "car.get_zipcode"}},
		{"no words: no seeds", with, "", nil, nil, []string{"fs.cd", "car.estimate_distance"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := toolsearch.New(docs, priors, tc.w)
			if got := names(ix.Search(tc.query, tc.used, 2, tc.allow)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Search(%q, %v) = %v, want %v", tc.query, tc.used, got, tc.want)
			}
		})
	}
}
