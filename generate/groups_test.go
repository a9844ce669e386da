package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/internal/fixture"
	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// deriveFile runs the derivation the way profiler derive does, returning
// its result and file (with a provenance).
func deriveFile(t *testing.T, cat *catalog.Catalog, us []telemetry.Usage) ([]telemetry.Usage, *derive.Result, *profiles.File) {
	t.Helper()
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	costs, err := exchange.ToolCosts(cat.Tools, counter)
	if err != nil {
		t.Fatal(err)
	}
	tools := make([]derive.Tool, len(costs))
	for i, c := range costs {
		tools[i] = derive.Tool{Name: c.Name, Bytes: c.Bytes, Tokens: c.Tokens[price.O200kBase]}
	}
	ds := us
	res, err := derive.Derive(ds, derive.Config{Tools: tools, Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	f := res.File()
	f.Provenance = &profiles.Provenance{Generator: "test", Sessions: len(ds), CatalogHash: "h", Method: "m", Tokenizer: price.O200kBase, Parameters: []string{"holdout=0.2"}}
	return ds, res, f
}

// defaultGroups is the groups step as profiler derive --groups runs it.
func defaultGroups() *Groups {
	return &Groups{Profile: groups.DefaultProfile, MaxSwitches: groups.DefaultMaxSwitches}
}

// stepReport runs the groups step g (nil: none) on file and prints and
// writes its reports as profiler derive does: the table to stdout, the
// JSON to report when not "".
func stepReport(t *testing.T, g *Groups, in groupsInput, out *Output, stdout io.Writer, report string) error {
	t.Helper()
	if err := g.step(context.Background(), in, out); err != nil || out.Groups == nil {
		return err
	}
	if err := WriteGroupsTable(stdout, out.Groups); err != nil {
		return err
	}
	if report == "" {
		return nil
	}
	var b bytes.Buffer
	if err := out.Groups.WriteJSON(&b); err != nil {
		return err
	}
	return os.WriteFile(report, b.Bytes(), 0o644)
}

// loadPrior is the profiles file at path as Run reads it: nil when absent.
func loadPrior(t *testing.T, path string) *profiles.File {
	t.Helper()
	f, _, err := LoadCurrent(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDeriveGroupsApply(t *testing.T) {
	dir, cat, us := fixture.Groups(t, 120)
	ds, res, _ := deriveFile(t, cat, us)
	out := filepath.Join(dir, "profiles.generated.toml")
	report := filepath.Join(dir, "groups.json")

	t.Run("without --groups the file is untouched", func(t *testing.T) {
		_, _, f := deriveFile(t, cat, us)
		var before, after, stdout bytes.Buffer
		profiles.Encode(&before, f)
		o := &Output{File: f}
		if err := stepReport(t, nil, groupsInput{Sessions: ds, Catalog: cat, Result: res, Holdout: 0.2, Prior: loadPrior(t, out)}, o, &stdout, ""); err != nil {
			t.Fatal(err)
		}
		if o.Encoded == nil {
			profiles.Encode(&after, f)
		} else {
			t.Error("without --groups the encoded file was rewritten")
		}
		if !bytes.Equal(before.Bytes(), after.Bytes()) || stdout.Len() != 0 {
			t.Errorf("file or output changed without --groups")
		}
	})

	encode := func() ([]byte, string) {
		_, _, f := deriveFile(t, cat, us)
		var stdout, again bytes.Buffer
		o := &Output{File: f, Encoded: []byte("stale bytes from before the groups")}
		if err := stepReport(t, defaultGroups(), groupsInput{Sessions: ds, Catalog: cat, Result: res, Holdout: 0.2, Prior: loadPrior(t, out)}, o, &stdout, report); err != nil {
			t.Fatal(err)
		}
		if err := profiles.Encode(&again, f); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.Encoded, again.Bytes()) {
			t.Errorf("the re-encoded bytes differ from the file:\n%s\n---\n%s", o.Encoded, again.Bytes())
		}
		return o.Encoded, stdout.String()
	}
	first, stdout := encode()
	second, _ := encode()
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs differ:\n%s\n---\n%s", first, second)
	}
	f, err := profiles.DecodeFile(bytes.NewReader(first), "generated")
	if err != nil {
		t.Fatalf("file does not load: %v\n%s", err, first)
	}
	var offering []string
	for _, p := range f.Profiles {
		if len(p.Groups) > 0 {
			offering = append(offering, p.Name)
		}
	}
	if len(f.Groups) == 0 || len(offering) != 1 {
		t.Fatalf("groups %d, profiles offering them %v; want groups offered by one profile\n%s", len(f.Groups), offering, first)
	}
	for _, want := range []string{"groups.profile=lean", "groups.max_switches=1.5", "groups.base_from="} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("provenance lacks %s", want)
		}
	}
	if !strings.Contains(stdout, "held-out") || !strings.Contains(stdout, "tool groups") {
		t.Errorf("stdout lacks the report:\n%s", stdout)
	}
	var rep groups.Result
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Holdout.Sessions != res.Counts.Holdout || len(rep.Groups) != len(f.Groups) {
		t.Errorf("report: %v; held-out %d sessions (derive held out %d), %d groups", err, rep.Holdout.Sessions, res.Counts.Holdout, len(rep.Groups))
	}
	counter, _ := price.NewCounter()
	served, err := bench.ServedCosts(context.Background(), cat, nil, counter)
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, c := range served {
		full += c.Model[price.DefaultFamily]
	}
	if rep.Holdout.FullTokens != full {
		t.Errorf("full catalog %d tokens in the groups report, %d as the gateway lists it (derive's pricing)", rep.Holdout.FullTokens, full)
	}
}

// TestDeriveGroupsTelemetrySwitches records sessions in real telemetry,
// some served the grouped profile of the current file that switched a
// group on, and checks the --groups step learns from those switches.
func TestDeriveGroupsTelemetrySwitches(t *testing.T) {
	dir, cat, us := fixture.Groups(t, 90)
	out := filepath.Join(dir, "profiles.generated.toml")
	var all []string
	for _, tl := range cat.Tools {
		all = append(all, tl.Name)
	}
	// The current file: "lean" offers "mail" (mail__t0..t5) and "rest".
	var mail, rest []string
	for _, n := range all {
		if strings.HasPrefix(n, "mail__") {
			mail = append(mail, n)
		} else {
			rest = append(rest, n)
		}
	}
	current := &profiles.File{Version: 1, Default: "lean", Profiles: []profiles.Profile{{Name: "full", Tools: all}, {Name: "lean", Tools: []string{}, Groups: []string{"mail", "rest"}}},
		Groups: []profiles.Group{{Name: "mail", Description: "mail", Tools: mail}, {Name: "rest", Description: "rest", Tools: rest}}}
	if err := profiles.WriteFile(out, current); err != nil {
		t.Fatal(err)
	}
	teleDir := filepath.Join(dir, "telemetry")
	rec, err := telemetry.OpenRecorder(teleDir, telemetry.RecorderOptions{Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	base := us[len(us)-1].Session.Start
	for _, u := range us {
		s := u.Session
		s.End = s.Start.Add(time.Minute)
		rec.Session(s)
		for j, tool := range append(slices.Clone(u.Tools), opcontext.ToolName) { // every session also reads the operating context
			rec.Call(telemetry.Call{Session: s.ID, Seq: uint64(j + 1), Tool: tool, Start: s.Start.Add(time.Second), Outcome: telemetry.OutcomeOK})
		}
	}
	const switched = 30
	for i := range switched {
		s := telemetry.Session{ID: fmt.Sprintf("g%d", i), Profile: "lean", Start: base.Add(time.Duration(i+1) * time.Hour)}
		s.End = s.Start.Add(time.Minute)
		rec.Session(s)
		// The gateway records the enable_tools call as a call, and the switch.
		rec.Call(telemetry.Call{Session: s.ID, Seq: 1, Tool: profiles.EnableToolsName, Start: s.Start.Add(time.Second), Outcome: telemetry.OutcomeOK})
		rec.Switch(s.ID, telemetry.Switch{Time: s.Start.Add(time.Second), Group: "mail"})
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	read, err := telemetry.ReadUsage(context.Background(), []string{teleDir}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	ds, res, f := deriveFile(t, cat, read)
	if err := stepReport(t, defaultGroups(), groupsInput{Sessions: ds, Catalog: cat, Result: res, Holdout: 0.2, Prior: loadPrior(t, out)}, &Output{File: f}, io.Discard, filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var rep groups.Result
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counts.Grouped != switched || rep.Counts.Used != len(us)+switched {
		t.Errorf("counts %+v: want the %d sessions served lean learned from (switches as demand)", rep.Counts, switched)
	}
	// enable_tools and get_operating_context are the gateway's tools: no
	// unknown tool, in derive's counts or the groups step's.
	if rep.Counts.UnknownCalls != 0 || len(rep.Counts.UnknownTools) != 0 || res.Counts.UnknownToolSessions != 0 || len(res.Counts.UnknownTools) != 0 {
		t.Errorf("unknown tools counted: groups %d %v, derive %d %v; want none", rep.Counts.UnknownCalls, rep.Counts.UnknownTools, res.Counts.UnknownToolSessions, res.Counts.UnknownTools)
	}
	// The switched sessions' demand is mail's tools: held-out, the lean
	// sessions (the newest) each need exactly the six mail tools.
	if h := rep.Holdout; h.Sessions == 0 || h.FloorTokens != float64(mailTokens(t, cat)) {
		t.Errorf("held-out floor %.1f tokens over %d sessions, want mail's %d tokens (the switch as demand)", h.FloorTokens, h.Sessions, mailTokens(t, cat))
	}
}

// mailTokens is the o200k_base tokens of cat's mail tools as derive prices
// them (as the gateway lists them).
func mailTokens(t *testing.T, cat *catalog.Catalog) int {
	t.Helper()
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	costs, err := bench.ServedCosts(context.Background(), cat, nil, counter)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, c := range costs {
		if strings.HasPrefix(name, "mail__") {
			n += c.Model[price.DefaultFamily]
		}
	}
	return n
}
