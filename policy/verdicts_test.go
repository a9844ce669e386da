package policy

import (
	"strings"
	"testing"
	"unicode"

	"github.com/toolprof/toolprof/internal/visible"
)

// TestWriteVerdictsHostileNames: a trace's session id, profile and tool
// names are what clients sent (a trace exported from telemetry holds a
// client's unknown tool names as sent); the verdicts reach the terminal
// with their control and format characters shown as escapes.
func TestWriteVerdictsHostileNames(t *testing.T) {
	const esc = "x\x1b]52;c;aGk=\x07\r\u202ey"
	vs := []Verdict{
		{Session: "s" + esc, Profile: "core", Calls: 1, Status: VerdictUnknownTool, Unknown: []string{"tool" + esc}},
		{Session: "s2", Profile: "p" + esc, Calls: 1, Status: VerdictUnknownProfile, Valid: []string{"core"}},
	}
	var b strings.Builder
	if err := WriteVerdicts(&b, vs, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if j := strings.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); j >= 0 {
			t.Errorf("line %d holds %U: %q", i+1, []rune(line[j:])[0], line)
		}
	}
	for _, want := range []string{"s" + visible.String(esc), "tool" + visible.String(esc), "p" + visible.String(esc)} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
