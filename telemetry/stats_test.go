package telemetry

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// statsSnapshot: two sessions of claude-code 2.1 (one without calls), one
// of a client without a name; calls with and without an outcome.
func statsSnapshot() *Snapshot {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return &Snapshot{
		Sessions: []Session{
			{ID: "r/1", Start: t0, End: t0.Add(time.Minute), ClientName: "claude-code", ClientVersion: "2.1"},
			{ID: "r/2", Start: t0.Add(time.Hour), ClientName: "claude-code", ClientVersion: "2.1"},
			{ID: "r/3", Start: t0.Add(2 * time.Hour)},
		},
		Calls: []Call{
			{Session: "r/1", Seq: 1, Tool: "read_file", Start: t0.Add(time.Second), Outcome: OutcomeOK},
			{Session: "r/1", Seq: 2, Tool: "write_file", Start: t0.Add(2 * time.Second), Outcome: OutcomeDenied},
			{Session: "r/3", Seq: 1, Tool: "read_file", Start: t0.Add(2*time.Hour + time.Second), Duration: 3 * time.Second},
		},
		Dropped:  2,
		Segments: []SegmentFile{{}},
		Skipped:  []SkippedSegment{{Path: "seg-live.open.db"}},
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	until := t0.Add(2*time.Hour + 4*time.Second) // the last call's end
	for _, c := range []struct {
		name string
		snap *Snapshot
		want Stats
	}{
		{"empty", &Snapshot{}, Stats{Tools: []StatRow{}, Clients: []StatRow{}, Outcomes: []StatRow{}, Attribution: []StatRow{}}},
		{"sessions and calls", statsSnapshot(), Stats{
			Since: &t0, Until: &until, Sessions: 3, Calls: 3, Dropped: 2, Segments: 1,
			Skipped: []string{"seg-live.open.db"},
			Tools:   []StatRow{{Name: "read_file", Calls: 2, Sessions: 2}, {Name: "write_file", Calls: 1, Sessions: 1}},
			// The session without calls counts for its client.
			Clients:     []StatRow{{Name: "claude-code 2.1", Calls: 2, Sessions: 2}, {Name: "(unnamed)", Calls: 1, Sessions: 1}},
			Outcomes:    []StatRow{{Name: "(not recorded)", Calls: 1, Sessions: 1}, {Name: "denied", Calls: 1, Sessions: 1}, {Name: "ok", Calls: 1, Sessions: 1}},
			Attribution: []StatRow{{Name: "connection", Calls: 3, Sessions: 3}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Summarize(c.snap); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Summarize =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

func TestSummarizeEffects(t *testing.T) {
	kinds := []string{"read", "mutate"}
	for _, c := range []struct {
		name    string
		catalog []ToolEffect
		want    []EffectStat
	}{
		{"every call in the catalog: no not-in-catalog row",
			[]ToolEffect{{Name: "read_file", Kind: "read", External: true}, {Name: "write_file", Kind: "mutate"}, {Name: "rm", Kind: "mutate"}},
			[]EffectStat{{Kind: "read", Tools: 1, External: 1, Calls: 2, Sessions: 2}, {Kind: "mutate", Tools: 2, Calls: 1, Sessions: 1}}},
		{"a call outside the catalog",
			[]ToolEffect{{Name: "read_file", Kind: "read"}},
			[]EffectStat{{Kind: "read", Tools: 1, Calls: 2, Sessions: 2}, {Kind: "mutate"}, {Kind: NotInCatalog, Calls: 1, Sessions: 1}}},
		{"a kind not listed is left out",
			[]ToolEffect{{Name: "read_file", Kind: "read"}, {Name: "write_file", Kind: "evaluate"}},
			[]EffectStat{{Kind: "read", Tools: 1, Calls: 2, Sessions: 2}, {Kind: "mutate"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := SummarizeEffects(statsSnapshot(), kinds, c.catalog); !reflect.DeepEqual(got, c.want) {
				t.Errorf("SummarizeEffects =\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

// TestSummarizeAttribution: stats splits sessions and calls by the rule
// that attributed them; a session without calls still counts.
func TestSummarizeAttribution(t *testing.T) {
	snap := &Snapshot{
		Sessions: []Session{{ID: "a"}, {ID: "b", Attribution: AttributionTrace}, {ID: "c", Attribution: AttributionTrace}, {ID: "d", Attribution: AttributionCaller}},
		Calls:    []Call{{Session: "a", Tool: "x"}, {Session: "b", Tool: "x"}, {Session: "b", Tool: "x"}, {Session: "c", Tool: "x"}},
	}
	got := Summarize(snap).Attribution
	want := []StatRow{{"trace", 3, 2}, {"connection", 1, 1}, {"caller", 0, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attribution %+v, want %+v", got, want)
	}
}

// TestScanStatsMatchesScan: stats from ScanStats' counts equal stats from
// Scan's call records, over several segments, outcomes outside the coded
// ones, a session known only from its calls, one known only from a
// switch, records of one trace on two replicas (merged), ends seen by one
// segment only and windows, while ScanStats holds no call record.
func TestScanStatsMatchesScan(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for seg := range 2 {
		r, err := OpenRecorder(dir, RecorderOptions{Replica: fmt.Sprint("r", seg)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			id := fmt.Sprintf("s%d", i%30) // sessions 0-9 span both segments
			if i%3 == 1 {
				id = fmt.Sprintf("%s-r%d", id, seg) // traced: each replica its own record
			}
			start := t0.Add(time.Duration(seg*40+i) * time.Minute)
			if i%7 != 3 {
				s := Session{ID: id, Start: t0.Add(time.Duration(i%30) * time.Minute), ClientName: fmt.Sprint("c", i%3), ClientVersion: fmt.Sprint(i % 2), Attribution: []Attribution{AttributionConnection, AttributionTrace, AttributionCaller}[i%3]}
				if s.Attribution == AttributionTrace {
					// One trace per replica's session pair: s1 and s4 on r0
					// join r1's, and so on.
					s.Trace, s.Profile = TraceKey(fmt.Sprint("t", i%6)), "p"
				}
				if i%4 == seg {
					s.End = start.Add(time.Duration(i) * time.Second)
				}
				r.Session(s)
			}
			outcome := Outcomes()[i%len(Outcomes())]
			if i%11 == 0 {
				outcome = "from_the_future"
			}
			r.Call(Call{Session: id, Seq: uint64(seg*100 + i), Tool: fmt.Sprint("tool", i%5), Start: start, Duration: time.Duration(i) * time.Second, Outcome: outcome})
			r.Call(Call{Session: id, Seq: uint64(seg*100 + i + 50), Tool: "tool0", Start: start.Add(time.Second)})
		}
		r.Switch(fmt.Sprint("only-switched", seg), Switch{Time: t0, Group: "g"})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	kinds := []string{"read", "mutate"}
	catalog := []ToolEffect{{Name: "tool0", Kind: "read"}, {Name: "tool1", Kind: "mutate", External: true}, {Name: "tool2", Kind: "evaluate"}}
	for _, w := range []Window{{}, {Since: t0.Add(10 * time.Minute)}, {Until: t0.Add(20 * time.Minute)}} {
		full, err := Scan(context.Background(), []string{dir}, w)
		if err != nil {
			t.Fatal(err)
		}
		counted, err := ScanStats(context.Background(), []string{dir}, w)
		if err != nil {
			t.Fatal(err)
		}
		if len(counted.Calls) != 0 || len(counted.Sessions) != 0 {
			t.Fatalf("window %v: ScanStats held %d calls and %d sessions", w, len(counted.Calls), len(counted.Sessions))
		}
		want, got := Summarize(full), Summarize(counted)
		if want.Calls == 0 {
			t.Fatalf("window %v: no calls to compare", w)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("window %v: from counts\n%+v\nfrom calls\n%+v", w, got, want)
		}
		if got, want := SummarizeEffects(counted, kinds, catalog), SummarizeEffects(full, kinds, catalog); !reflect.DeepEqual(got, want) {
			t.Errorf("window %v: effects from counts %+v, from calls %+v", w, got, want)
		}
	}
}

// TestGather: the in-place reordering keeps exactly the kept usages, in
// the order given.
func TestGather(t *testing.T) {
	for _, kept := range [][]int32{{}, {0}, {2, 0, 1}, {4, 1}, {1, 2, 3, 4, 0}, {3}} {
		us := make([]Usage, 5)
		for i := range us {
			us[i].Session.ID = fmt.Sprint(i)
		}
		got := gather(us, kept)
		var ids, want []string
		for _, u := range got {
			ids = append(ids, u.Session.ID)
		}
		for _, i := range kept {
			want = append(want, fmt.Sprint(i))
		}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("gather(%v) = %v, want %v", kept, ids, want)
		}
	}
}
