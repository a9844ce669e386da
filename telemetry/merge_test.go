package telemetry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTraceSessionsMergeAcrossReplicas: three replicas each record a usage
// session for one trace; ReadAll, ReadUsage and Summarize see one session
// holding every call (numbered again in start order) and every tool. A
// second trace, a caller-attributed session and a session of the same
// trace at another profile stay apart.
func TestTraceSessionsMergeAcrossReplicas(t *testing.T) {
	base := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	trace, other := TraceKey("4bf92f3577b34da6a3ce929d0e0e4736"), TraceKey("00f067aa0ba902b700f067aa0ba902b7")
	if trace == other || len(trace) != 32 {
		t.Fatalf("trace keys %q, %q: want distinct 32-digit hashes", trace, other)
	}
	var dirs []string
	for i, replica := range []string{"r1", "r2", "r3"} {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: replica})
		at := base.Add(time.Duration(i) * time.Second)
		for _, s := range []struct {
			trace, profile string
			rule           Attribution
			tools          []string
		}{
			{trace, "core", AttributionTrace, []string{fmt.Sprintf("tool_%d", i), "shared"}},
			{other, "core", AttributionTrace, []string{"other"}},
			{"", "core", AttributionCaller, []string{"caller"}},
			{trace, "full", AttributionTrace, []string{"wide"}},
		} {
			sess := Session{ID: r.NewSessionID(), Start: at, Profile: s.profile, Attribution: s.rule, Trace: s.trace, ToolsListCalls: 1, ToolsListPages: 2}
			r.Session(sess)
			for j, tool := range s.tools {
				r.Call(Call{Session: sess.ID, Seq: uint64(j + 1), Tool: tool, Start: at.Add(time.Duration(j) * time.Millisecond), Outcome: OutcomeOK})
			}
			sess.End = at.Add(time.Minute)
			r.Session(sess)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	sessions, calls, err := ReadAll(ctx, dirs, Window{})
	if err != nil {
		t.Fatal(err)
	}
	// One merged session per (trace, profile): trace/core, other/core,
	// trace/full; three caller sessions.
	if len(sessions) != 6 {
		t.Fatalf("%d sessions, want 6: %+v", len(sessions), sessions)
	}
	var merged Session
	for _, s := range sessions {
		if s.Trace == trace && s.Profile == "core" {
			merged = s
		}
	}
	if !strings.HasPrefix(merged.ID, "r1/") || !merged.Start.Equal(base) || !merged.End.Equal(base.Add(2*time.Second+time.Minute)) ||
		merged.ToolsListCalls != 3 || merged.ToolsListPages != 6 {
		t.Errorf("merged session %+v: want r1's ID and start, r3's end, summed list counts", merged)
	}
	var seqs []uint64
	var tools []string
	for _, c := range calls {
		if c.Session == merged.ID {
			seqs, tools = append(seqs, c.Seq), append(tools, c.Tool)
		}
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6}) || !slices.Equal(tools, []string{"tool_0", "shared", "tool_1", "shared", "tool_2", "shared"}) {
		t.Errorf("merged calls seq %v tools %v: want 1..6 in start order", seqs, tools)
	}
	if len(calls) != 3*5 {
		t.Errorf("%d calls, want 15", len(calls))
	}

	usage, err := ReadUsage(ctx, dirs, Window{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usage {
		if u.Session.ID == merged.ID && (u.Calls != 6 || !slices.Equal(u.Tools, []string{"shared", "tool_0", "tool_1", "tool_2"})) {
			t.Errorf("merged usage %+v: want 6 calls of tool_0..2 and shared", u)
		}
	}
	if len(usage) != 6 {
		t.Errorf("%d usage sessions, want 6", len(usage))
	}
	snap, err := Scan(ctx, dirs, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(Summarize(snap).Attribution); got != "[{trace 12 3} {caller 3 3}]" {
		t.Errorf("attribution rows %s, want 3 trace sessions of 12 calls and 3 caller sessions", got)
	}
}
