package opcontext

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSchema is a write tool that takes project_id and agent_id.
var writeSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"project_id": map[string]any{"type": "string"},
		"agent_id":   map[string]any{"type": "string"},
		"content":    map[string]any{"type": "string"},
	},
}

// Absent, switched-off and invalid sidecars leave every surface exactly as
// it would be without the feature.
func TestDormantStatesChangeNothing(t *testing.T) {
	valid := fmt.Sprintf(sidecar, "reject")
	tests := []struct {
		name     string
		file     string // "" = no file
		vars     map[string]string
		noHome   bool
		state    State
		findings []string // checks
	}{
		{name: "absent file", state: StateDormant},
		{name: "no home and no override", noHome: true, state: StateDormant},
		{name: "kill switch off", file: valid, vars: map[string]string{EnvSwitch: "off"}, state: StateOff},
		{name: "kill switch OFF upper case", file: valid, vars: map[string]string{EnvSwitch: "OFF"}, state: StateOff},
		{name: "kill switch unrecognised stays off", file: valid, vars: map[string]string{EnvSwitch: "disabled"}, state: StateOff},
		{name: "invalid file", file: "version = 1\n[registry]\nenforce = \"strict\"\n", state: StateInvalid, findings: []string{"parse"}},
		{name: "path is a directory", file: "<dir>", state: StateInvalid, findings: []string{"parse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			vars := map[string]string{}
			for k, v := range tt.vars {
				vars[k] = v
			}
			switch tt.file {
			case "":
			case "<dir>":
				if err := os.MkdirAll(DefaultPath(home), 0o700); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.MkdirAll(filepath.Dir(DefaultPath(home)), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Dir(DefaultPath(home)), filepath.Base(DefaultPath(home)), tt.file)
			}
			if tt.noHome {
				home = ""
			}
			s := New(env(vars), home, nil)
			if s.Active() {
				t.Fatal("active")
			}
			if got := s.Status().State; got != tt.state {
				t.Fatalf("state %q, want %q", got, tt.state)
			}
			var checks []string
			for _, f := range s.Findings() {
				checks = append(checks, f.Check)
			}
			if strings.Join(checks, ",") != strings.Join(tt.findings, ",") {
				t.Fatalf("findings %v, want %v", s.Findings(), tt.findings)
			}
			for _, p := range []string{"", "Profile text.\n", "  spaced  "} {
				if got := s.Instructions(p); got != p {
					t.Errorf("Instructions(%q) = %q", p, got)
				}
			}
			args := json.RawMessage(`{ "project_id" : "@auto", "content":"x" }`)
			d, err := s.Check(context.Background(), CallInfo{Tool: "store", Writes: true, InputSchema: writeSchema, Arguments: args, Client: "claude-code"})
			if err != nil {
				t.Fatal(err)
			}
			if string(d.Arguments) != string(args) || d.Rejected() || d.Resolved || len(d.Warnings) > 0 || d.Meta() != nil {
				t.Fatalf("decision %+v", d)
			}
			res, err := s.CallTool(nil)
			if err != nil || !res.IsError {
				t.Fatalf("CallTool while %s: %+v %v", tt.state, res, err)
			}
		})
	}
}

func TestPathSelection(t *testing.T) {
	home := t.TempDir()
	if got := New(env(nil), home, nil).Path(); got != filepath.Join(home, ".toolprof", "operating-context.toml") {
		t.Errorf("default path %q", got)
	}
	if got := New(env(map[string]string{EnvPath: "/x/oc.toml"}), home, nil).Path(); got != "/x/oc.toml" {
		t.Errorf("override %q", got)
	}
	if got := New(env(map[string]string{EnvPath: " "}), home, nil).Path(); got != DefaultPath(home) {
		t.Errorf("blank override %q", got)
	}
	for _, on := range []string{"on", "", "1"} {
		dir := t.TempDir()
		p := writeFile(t, dir, "oc.toml", "version = 1\n")
		if !New(env(map[string]string{EnvPath: p, EnvSwitch: on}), home, nil).Active() {
			t.Errorf("switch %q turned the feature off", on)
		}
	}
}

func TestInstructionsComposition(t *testing.T) {
	tests := []struct {
		name, profile, summary, want string
	}{
		{"both", "Profile says this.", "Context says that.\n", "Profile says this.\n\nContext says that."},
		{"profile with trailing newline", "Profile.\n", "Context.", "Profile.\n\nContext."},
		{"no profile instructions", "", "Context.\n", "Context."},
		{"no summary", "Profile.\n", "", "Profile.\n"},
		{"blank summary", "Profile.", "  \n", "Profile."},
		{"neither", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "oc.toml", fmt.Sprintf("version = 1\n[instructions]\nsummary = %q\n", tt.summary))
			s := sourceAt(t, p, nil)
			if got := s.Instructions(tt.profile); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// An edit reaches the next call's registry check AND the next new
// session's instructions, without a new Source (the design's bug-252: its
// instructions stayed frozen until the process restarted).
func TestReloadMidSession(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "oc.toml", fmt.Sprintf(sidecar, "reject"))
	s := sourceAt(t, p, nil)
	call := CallInfo{Tool: "store", Writes: true, InputSchema: writeSchema,
		Arguments: json.RawMessage(`{"project_id":"beta-app"}`)}

	d, err := s.Check(context.Background(), call)
	if err != nil || !d.Rejected() {
		t.Fatalf("before the edit: %+v %v", d, err)
	}
	if got := s.Instructions("P."); !strings.Contains(got, "rev 2026-07-16.1") {
		t.Fatalf("before the edit: %q", got)
	}

	edited := strings.NewReplacer(`"acme-app"]`, `"acme-app", "beta-app"]`,
		"Operating context (rev 2026-07-16.1).", "Operating context (rev 2026-07-17.1).").
		Replace(fmt.Sprintf(sidecar, "reject"))
	writeFile(t, dir, "oc.toml", edited)

	d, err = s.Check(context.Background(), call)
	if err != nil || d.Rejected() || len(d.Warnings) > 0 {
		t.Fatalf("after the edit the registry should hold beta-app: %+v %v", d, err)
	}
	if got := s.Instructions("P."); !strings.Contains(got, "rev 2026-07-17.1") {
		t.Fatalf("after the edit a new session's instructions are %q", got)
	}

	// Broken: off with a finding; fixed: on again; removed: dormant.
	writeFile(t, dir, "oc.toml", "version = 1\n[registry]\nenforce = \"nope\"\n")
	if s.Active() || len(s.Findings()) != 1 || s.Instructions("P.") != "P." {
		t.Fatalf("after breaking the file: active %v findings %v", s.Active(), s.Findings())
	}
	writeFile(t, dir, "oc.toml", edited)
	if !s.Active() || len(s.Findings()) != 0 {
		t.Fatalf("after fixing the file: active %v findings %v", s.Active(), s.Findings())
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if s.Active() || s.Status().State != StateDormant || s.Instructions("P.") != "P." {
		t.Fatalf("after removing the file: %+v", s.Status())
	}
}

// A same-size edit that keeps the modification time is still seen while
// the timestamp is recent (within the filesystem's granularity), by
// reading the file; once it is old the stat decides, and a replacement
// (another inode) is seen by it.
func TestReloadSameSizeSameMtime(t *testing.T) {
	for _, tt := range []struct {
		name    string
		age     time.Duration
		replace bool // write another file and rename it over
	}{
		{"recent mtime is re-read", 0, false},
		{"old mtime, replaced: another inode", time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "oc.toml", "version = 1\ncontext_revision = \"aaaa\"\n")
			mtime := time.Now().Add(-tt.age)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			s := sourceAt(t, p, nil)
			if s.Status().Revision != "aaaa" {
				t.Fatal(s.Status())
			}
			name := "oc.toml"
			if tt.replace {
				name = "next.toml"
			}
			next := writeFile(t, dir, name, "version = 1\ncontext_revision = \"bbbb\"\n")
			if err := os.Chtimes(next, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if tt.replace {
				if err := os.Rename(next, p); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Status().Revision; got != "bbbb" {
				t.Fatalf("revision %q, want %q", got, "bbbb")
			}
		})
	}
}

func TestFindings(t *testing.T) {
	long := strings.Repeat("é", SizeLimit+1) // characters, not bytes
	atLimit := strings.Repeat("é", SizeLimit)
	tests := []struct {
		name     string
		file     string
		active   bool
		check    string
		severity string
		message  []string
	}{
		{"parse", "version = 1\n[registry]\nenforce = \"strict\"\n", false, "parse", "warn", []string{"oc.toml:3", "registry.enforce"}},
		{"size", fmt.Sprintf("version = 1\n[instructions]\nsummary = %q\n", long), true, "size", "info", []string{"3001 characters", "3000"}},
		{"at the limit", fmt.Sprintf("version = 1\n[instructions]\nsummary = %q\n", atLimit), true, "", "", nil},
		{"fine", fmt.Sprintf(sidecar, "warn"), true, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceAt(t, writeFile(t, t.TempDir(), "oc.toml", tt.file), nil)
			if s.Active() != tt.active {
				t.Fatalf("active %v", s.Active())
			}
			fs := s.Findings()
			if tt.check == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Check != tt.check || fs[0].Severity != tt.severity {
				t.Fatalf("findings %v", fs)
			}
			for _, w := range tt.message {
				if !strings.Contains(fs[0].Message, w) {
					t.Errorf("message %q lacks %q", fs[0].Message, w)
				}
			}
		})
	}
}

// An invalid file is logged once, not on every use; a different invalid
// content is logged again.
func TestInvalidLoggedOnce(t *testing.T) {
	var logs logBuffer
	dir := t.TempDir()
	p := writeFile(t, dir, "oc.toml", "version = 1\nbogus = 1\n")
	// Old mtime: the stat alone decides, as in steady state.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	s := sourceAt(t, p, &logs)
	for range 5 {
		s.Active()
		s.Instructions("x")
		s.Findings()
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "bogus") {
		t.Fatalf("warning does not name the key: %s", logs.String())
	}
	writeFile(t, dir, "oc.toml", "version = 1\nother = 1\n")
	for range 3 {
		s.Active()
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d warnings after a new invalid edit:\n%s", n, logs.String())
	}
}

func TestUnrecognisedSwitchIsLogged(t *testing.T) {
	var logs logBuffer
	New(env(map[string]string{EnvSwitch: "disabled"}), t.TempDir(), logs.logger())
	if !strings.Contains(logs.String(), EnvSwitch) || !strings.Contains(logs.String(), "disabled") {
		t.Fatalf("log: %s", logs.String())
	}
}

// Sessions use the Source concurrently while the operator edits the file;
// run with -race. Every answer is one of the two files' answers, never a
// mix.
func TestConcurrentUseDuringEdits(t *testing.T) {
	dir := t.TempDir()
	fileA := fmt.Sprintf(sidecar, "reject")
	fileB := strings.ReplaceAll(fileA, `"acme-app"]`, `"acme-app", "beta-app"]`)
	p := writeFile(t, dir, "oc.toml", fileA)
	s := sourceAt(t, p, nil)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				d, err := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: writeSchema, Arguments: json.RawMessage(`{"project_id":"@auto"}`), Client: "claude-code"})
				if err != nil || string(d.Arguments) != `{"project_id":"acme-app"}` {
					errs <- fmt.Errorf("decision %+v %v", d, err)
					return
				}
				s.Instructions("P.")
				s.Findings()
			}
		}()
	}
	for i := range 50 {
		// Write to a temp file and rename, as an editor does, so no reader
		// sees a half-written file.
		tmp := writeFile(t, dir, "oc.toml.tmp", []string{fileA, fileB}[i%2])
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// CheckEvery bounds Check's looks at the file, on an injected clock: a
// replacement is not seen by a Check within CheckEvery of the last look,
// is seen by the first one after, and is always seen by the other methods
// (a new session's instructions, health), whose looks also renew Check's
// snapshot. Zero looks on every Check.
func TestCheckEveryBoundsLooks(t *testing.T) {
	const every = time.Second
	for _, tt := range []struct {
		name       string
		checkEvery time.Duration
		after      time.Duration // clock advance between the edit and the Check
		status     bool          // Status looks between the edit and the Check
		want       string        // revision the Check sees
	}{
		{"within the bound: the last look's snapshot", every, every / 2, false, "aaaa"},
		{"at the bound: looks again", every, every, false, "bbbb"},
		{"past the bound: looks again", every, 2 * every, false, "bbbb"},
		{"another method looked within the bound", every, every / 2, true, "bbbb"},
		{"zero: every Check looks", 0, 0, false, "bbbb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "oc.toml", "version = 1\ncontext_revision = \"aaaa\"\n")
			s := sourceAt(t, p, nil)
			clock := time.Unix(1_000_000, 0)
			s.CheckEvery, s.now = tt.checkEvery, func() time.Time { return clock }
			call := CallInfo{Tool: "store", Arguments: json.RawMessage(`{}`)}
			if d, err := s.Check(context.Background(), call); err != nil || d.Revision != "aaaa" {
				t.Fatalf("first Check: %+v %v", d, err)
			}
			next := writeFile(t, dir, "next.toml", "version = 1\ncontext_revision = \"bbbb\"\n")
			if err := os.Rename(next, p); err != nil {
				t.Fatal(err)
			}
			if tt.status {
				if got := s.Status().Revision; got != "bbbb" {
					t.Fatalf("Status after the edit: revision %q, want bbbb", got)
				}
			}
			clock = clock.Add(tt.after)
			if d, err := s.Check(context.Background(), call); err != nil || d.Revision != tt.want {
				t.Errorf("Check %v after the edit: revision %q (%v), want %q", tt.after, d.Revision, err, tt.want)
			}
		})
	}
}
