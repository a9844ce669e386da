package report

import "testing"

func TestServerOf(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"fs__read_file", "fs"},
		{"fs__a__b", "fs"},
		{"read_file", Unprefixed},
		{"__odd", Unprefixed},
	} {
		if got := ServerOf(tc.tool); got != tc.want {
			t.Errorf("ServerOf(%q) = %q, want %q", tc.tool, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"telemetry-data", "telemetry-data"},
		{"/tmp/a b", "'/tmp/a b'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"$(rm -rf x)", "'$(rm -rf x)'"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestDayRange: days without sessions are listed, so the trend's axis is
// time, and each day's share is of its own sessions.
func TestDayRange(t *testing.T) {
	got := dayRange(map[string]*Day{
		"2026-03-01": {Day: "2026-03-01", Sessions: 4, Served: 3},
		"2026-03-03": {Day: "2026-03-03", Sessions: 1, Served: 1, Calls: 2},
	})
	want := []Day{
		{Day: "2026-03-01", Sessions: 4, Served: 3, ServedShare: 0.75},
		{Day: "2026-03-02"},
		{Day: "2026-03-03", Sessions: 1, Served: 1, Calls: 2, ServedShare: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("dayRange: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("day %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := dayRange(nil); len(got) != 0 {
		t.Errorf("no days: %v", got)
	}
}
