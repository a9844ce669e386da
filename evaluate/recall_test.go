package evaluate_test

import (
	"testing"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/toolsearch"
)

// TestReplaySearch replays the search arm without pricing: a clarifying
// turn is searched with the request before it, a companion the words
// never name is found through its co-use with the best text match, a
// tool an earlier answer returned is served without a search, and a
// listed one never searched for.
func TestReplaySearch(t *testing.T) {
	docs := []toolsearch.Doc{
		{Name: "msg.send", Description: "Send a message to a user.", Params: []string{"receiver_id", "message"}},
		{Name: "msg.login", Description: "Log in to the messaging service.", Params: []string{"user_id"}},
		{Name: "car.estimate_distance", Description: "Estimate the distance between two cities."},
		{Name: "car.get_zipcode", Description: "Look up the zipcode of a city."},
		{Name: "fs.cd", Description: "Change the working directory.", Params: []string{"folder"}},
	}
	priors := &toolsearch.Priors{
		Tools: map[string]float64{"fs.cd": 0.5, "msg.send": 0.1, "msg.login": 0.1, "car.estimate_distance": 0.1, "car.get_zipcode": 0.1},
		Pairs: map[string]map[string]float64{
			"car.estimate_distance": {"car.get_zipcode": 0.9},
			"car.get_zipcode":       {"car.estimate_distance": 0.9},
		},
	}
	sessions := []evaluate.Session{
		{ID: "clarified", Turns: []string{"Send a message to my colleague.", "His name is Bob."}, Calls: []evaluate.Call{{Tool: "msg.send", Turn: 1}}},
		{ID: "companion", Turns: []string{"Estimate the distance from Rivermist to Stonebrook."},
			Calls: []evaluate.Call{{Tool: "car.get_zipcode", Turn: 0}, {Tool: "car.estimate_distance", Turn: 0}, {Tool: "car.get_zipcode", Turn: 0}}},
		{ID: "listed", Turns: []string{"go to the temp folder"}, Calls: []evaluate.Call{{Tool: "fs.cd", Turn: 0}, {Tool: "gone", Turn: 0}}},
	}
	with := toolsearch.Weights{Text: 1, Popularity: 1, CoUse: 1, Feedback: 1}
	without := with
	without.Feedback = 0
	for _, tc := range []struct {
		name                     string
		w                        toolsearch.Weights
		turns                    int
		served, searches, missed int
		recall1                  int
	}{
		{"the turn and the one before, feedback", with, 2, 4, 2, 0, 1},
		{"the turn alone", with, 1, 3, 2, 1, 0},
		{"no feedback", without, 2, 3, 2, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluate.ReplaySearch(toolsearch.New(docs, priors, tc.w), sessions,
				evaluate.SearchOptions{Listed: map[string]bool{"fs.cd": true}, Limit: 2, QueryTurns: tc.turns})
			if r.Uses != 4 || r.Served != tc.served || r.Needed != tc.searches || r.Missed != tc.missed || r.At[1] != tc.recall1 {
				t.Errorf("uses %d, served %d, searches %d, sessions missed %d, found first %d; want 4, %d, %d, %d, %d",
					r.Uses, r.Served, r.Needed, r.Missed, r.At[1], tc.served, tc.searches, tc.missed, tc.recall1)
			}
		})
	}
}
