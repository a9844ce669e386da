package bench

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadProfiles(t *testing.T) {
	present := filepath.Join("testdata", "profiles.generated.toml")
	absent := filepath.Join(t.TempDir(), "profiles.generated.toml")
	for _, c := range []struct {
		name         string
		path         string
		explicit     bool
		wantSet      bool
		wantMeasured string
		wantErr      bool
		wantLog      string
	}{
		{name: "present", path: present, wantSet: true, wantMeasured: present},
		{name: "present and named", path: present, explicit: true, wantSet: true, wantMeasured: present},
		{name: "default absent: full catalog only", path: absent, wantLog: "bench: no " + absent + " here: measuring the full catalog only"},
		{name: "named and absent", path: absent, explicit: true, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			set, measured, err := LoadProfiles(c.path, c.explicit, &log)
			if (err != nil) != c.wantErr {
				t.Fatalf("LoadProfiles error = %v, want error %v", err, c.wantErr)
			}
			if (set != nil) != c.wantSet || measured != c.wantMeasured {
				t.Errorf("LoadProfiles = set %v, path %q; want set %v, path %q", set != nil, measured, c.wantSet, c.wantMeasured)
			}
			if !strings.HasPrefix(log.String(), c.wantLog) || (c.wantLog == "") != (log.Len() == 0) {
				t.Errorf("LoadProfiles said %q, want %q", log.String(), c.wantLog)
			}
		})
	}
}

func TestBudgetError(t *testing.T) {
	r := sampleReport(t) // core: 1200 bytes on the wire
	if err := r.BudgetError([]Budget{{Profile: "core", Unit: UnitBytes, Limit: 1500}}); err != nil {
		t.Errorf("within budget: BudgetError = %v, want nil", err)
	}
	if err := r.BudgetError(nil); err != nil {
		t.Errorf("no budgets: BudgetError = %v, want nil", err)
	}
	err := r.BudgetError([]Budget{{Profile: "core", Unit: UnitBytes, Limit: 1000}, {Profile: "core", Unit: UnitBytes, Limit: 1100}})
	if err == nil {
		t.Fatal("over two budgets: BudgetError = nil")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "over budget: ") || !strings.Contains(msg, "200 over its budget of 1000") || !strings.Contains(msg, "100 over its budget of 1100") {
		t.Errorf("BudgetError = %q, want both budgets exceeded named after \"over budget: \"", msg)
	}
	var over OverBudget
	if !errors.As(err, &over) || over.Limit != 1000 {
		t.Errorf("BudgetError does not unwrap to the first OverBudget: %v", err)
	}
}
