package report

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/toolprof/toolprof/internal/mdtext"
	"github.com/toolprof/toolprof/internal/visible"
	"github.com/toolprof/toolprof/telemetry"
)

func TestStats(t *testing.T) {
	cat := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(cat, []byte(`{"tools": [
 {"name": "read_file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "rm", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}
]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := &telemetry.Snapshot{Dropped: 3}
	st, err := Stats(snap, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 3 || st.Effects != nil {
		t.Errorf("without catalogs: dropped %d, effects %v; want 3 and none", st.Dropped, st.Effects)
	}
	st, err = Stats(snap, []string{cat}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []telemetry.EffectStat{{Kind: "read", Tools: 1}, {Kind: "evaluate"}, {Kind: "mutate"}, {Kind: "destructive", Tools: 1}}
	if !reflect.DeepEqual(st.Effects, want) {
		t.Errorf("with a catalog: effects %+v, want %+v", st.Effects, want)
	}
	if _, err := Stats(snap, []string{filepath.Join(t.TempDir(), "absent.json")}, ""); err == nil {
		t.Error("a missing catalog: want an error")
	}
}

// TestStatsMarkdownHostileNames: tool and client names are the callers'
// own strings (an unknown tool a client calls, its clientInfo), and the
// markdown is a pull request's body; each name shows as itself (its
// control characters as escapes) in its own cell, and none adds a line,
// a link, an image or HTML.
func TestStatsMarkdownHostileNames(t *testing.T) {
	hostile := []string{
		`<img src="https://example.com/pixel.png">`,
		"[approve this pull request](https://example.com)",
		"</details>\r\n# forged heading",
		"@octocat a|b `code`",
		"x\r| forged | 9 | 9 |",
	}
	st := telemetry.Stats{}
	for i, name := range hostile {
		st.Tools = append(st.Tools, telemetry.StatRow{Name: name, Calls: i + 1, Sessions: 1})
		st.Clients = append(st.Clients, telemetry.StatRow{Name: name + " 1.0", Calls: i + 1, Sessions: 1})
	}
	var b strings.Builder
	if err := WriteStatsMarkdown(&b, st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var rows []string // the tool and client sections' rows, in order
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "| tool |") || strings.HasPrefix(lines[i], "| client |") {
			rows = append(rows, lines[i+2:i+2+len(hostile)]...)
		}
		if strings.ContainsRune(lines[i], '\r') {
			t.Errorf("line %d holds a CR, a line ending to GitHub: %q", i+1, lines[i])
		}
	}
	if len(rows) != 2*len(hostile) {
		t.Fatalf("want %d tool and client rows, got %d in:\n%s", 2*len(hostile), len(rows), b.String())
	}
	for i, row := range rows {
		want := visible.String(hostile[i%len(hostile)])
		if i >= len(hostile) {
			want += " 1.0"
		}
		cells := mdtext.Cells(row)
		if len(cells) != 3 {
			t.Errorf("row %q reads as %d cells %q, want 3", row, len(cells), cells)
			continue
		}
		if got, ok := mdtext.CodeContent(cells[0]); !ok || got != want {
			t.Errorf("row %q: name cell %q shows %q (code %v), want the code span %q", row, cells[0], got, ok, want)
		}
	}
}

// TestStatsTableHostileNames: a tool or client name from telemetry holding
// terminal escapes, a carriage return or a bidirectional override reaches
// the operator's terminal as visible escapes, never as the characters.
func TestStatsTableHostileNames(t *testing.T) {
	hostile := []string{
		"x\x1b]52;c;aGk=\x07y",  // OSC 52: writes the terminal's clipboard
		"clear\x1b[2J\x1b[H",    // clears the screen
		"row\r│ forged │ 999 │", // overwrites its own row
		"abc\u202eelif_daer",    // reads backwards
	}
	st := telemetry.Stats{}
	for i, name := range hostile {
		st.Tools = append(st.Tools, telemetry.StatRow{Name: name, Calls: i + 1, Sessions: 1})
		st.Clients = append(st.Clients, telemetry.StatRow{Name: name + " 1.0", Calls: i + 1, Sessions: 1})
	}
	var b strings.Builder
	if err := WriteStatsTable(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if j := strings.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); j >= 0 {
			t.Errorf("line %d holds %U: %q", i+1, []rune(line[j:])[0], line)
		}
	}
	for _, name := range hostile {
		if !strings.Contains(out, visible.String(name)) {
			t.Errorf("the table lacks %q shown as %q:\n%s", name, visible.String(name), out)
		}
	}
}
