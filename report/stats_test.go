package report

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
