package generate

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/internal/ownfile"
	"github.com/toolprof/toolprof/profiles"
)

// Check reports the first setting of cfg that Run cannot use, named as
// profiler derive's flag that sets it: the inputs (exactly one of
// Telemetry and Traces), Catalog, Out and the shares and counts. Specs,
// Groups and Choose are checked where they are made (ParseSpecs).
func (cfg *Config) Check() error {
	switch {
	case len(cfg.Telemetry) == 0 && len(cfg.Traces) == 0:
		return fmt.Errorf("derive: give sessions with --telemetry DIR or --trace FILE.jsonl")
	case len(cfg.Telemetry) > 0 && len(cfg.Traces) > 0:
		return fmt.Errorf("derive: --telemetry and --trace are exclusive; import traces into telemetry (profiler import) to combine them")
	case cfg.Catalog == "":
		return fmt.Errorf("derive: --catalog FILE is required")
	case cfg.Out == "":
		return fmt.Errorf("derive: --out must name a file")
	case !(cfg.Holdout >= 0 && cfg.Holdout < 1):
		return fmt.Errorf("derive: --holdout %v: want a share from 0 up to (not including) 1", cfg.Holdout)
	case !(cfg.DefaultTarget >= 0 && cfg.DefaultTarget <= 1):
		return fmt.Errorf("derive: --default-target %v: want a share from 0 to 1", cfg.DefaultTarget)
	case !(cfg.MaxUnknownShare >= 0 && cfg.MaxUnknownShare <= 1):
		return fmt.Errorf("derive: --max-unknown-share %v: want a share from 0 to 1", cfg.MaxUnknownShare)
	case cfg.MinSessions < 0:
		return fmt.Errorf("derive: --min-sessions %d: want a count >= 0", cfg.MinSessions)
	case cfg.MaxTools < 0:
		return fmt.Errorf("derive: --max-tools %d: want a tool count of at least 1 (0: no cap)", cfg.MaxTools)
	}
	return cfg.checkOut()
}

// checkOut refuses an Out whose writing would replace what a person
// wrote: the hand-written profiles.toml (by its name, as Policy, or the
// same file by a link), or an existing file that neither starts with the
// generated header nor reads as a generated file. A generated file that
// no longer reads (a merge conflict under its header) may be replaced.
func (cfg *Config) checkOut() error {
	policy := cmp.Or(cfg.Policy, profiles.PolicyPathFor(cfg.Out))
	if filepath.Base(cfg.Out) == profiles.PolicyFile || filepath.Clean(cfg.Out) == filepath.Clean(policy) || sameFile(cfg.Out, policy) {
		return fmt.Errorf("derive: --out %s is the hand-written %s derive reads decisions from, which writing would replace; name the generated file, such as %s",
			cfg.Out, profiles.PolicyFile, filepath.Join(filepath.Dir(cfg.Out), "profiles.generated.toml"))
	}
	return ownfile.Check(cfg.Out, func(b []byte) error {
		if bytes.HasPrefix(b, []byte(profiles.Header)) {
			return nil
		}
		_, err := profiles.DecodeFile(bytes.NewReader(b), cfg.Out)
		return err
	}, ownfile.Wording{
		Unreadable: func(err error) error { return fmt.Errorf("derive: --out %s: %w", cfg.Out, err) },
		Foreign: func(why error) error {
			return fmt.Errorf("derive: --out %s exists and is no profiles file derive wrote (no %q first line, and %v); writing would replace it: remove it or name another file", cfg.Out, profiles.Header, why)
		},
	})
}

// sameFile reports whether a and b both exist and are one file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// SpecFlags are the flags profiler derive makes its Specs from.
type SpecFlags struct {
	Profiles  []string // --profile NAME=SHARE, smallest first
	Target    float64  // --target: one profile, core, at this share
	TargetSet bool     // --target was given
	Budget    int      // --budget-tokens: the smallest profile's token budget (0: none)
}

// ParseSpecs are the profiles to derive, smallest first: f.Profiles when
// given, else core at f.Target when set, else derive.DefaultSpecs; with
// f.Budget the smallest is the most sessions within that many tokens. An
// error names the flag at fault and what would be valid.
func ParseSpecs(f SpecFlags) ([]derive.Spec, error) {
	switch {
	case f.Budget < 0:
		return nil, fmt.Errorf("derive: --budget-tokens %d: want a positive token count", f.Budget)
	case f.TargetSet && len(f.Profiles) > 0:
		return nil, fmt.Errorf("derive: --target and --profile are exclusive: --target T is short for --profile core=T")
	case f.TargetSet && !(f.Target >= 0 && f.Target <= 1):
		return nil, fmt.Errorf("derive: --target %v: want a share from 0 to 1", f.Target)
	}
	specs := derive.DefaultSpecs()
	if f.TargetSet {
		specs = []derive.Spec{{Name: "core", Target: f.Target}}
	}
	if len(f.Profiles) > 0 {
		specs = nil
		for _, v := range f.Profiles {
			name, val, ok := strings.Cut(v, "=")
			share, err := strconv.ParseFloat(val, 64)
			if !ok || name == "" || err != nil || !(share >= 0 && share <= 1) {
				return nil, fmt.Errorf("derive: --profile %q: want NAME=SHARE with SHARE from 0 to 1, e.g. core=0.8", v)
			}
			specs = append(specs, derive.Spec{Name: name, Target: share})
		}
	}
	if f.Budget > 0 {
		specs[0].Budget = f.Budget
	}
	for _, sp := range specs {
		if sp.Name == profiles.FullProfile {
			return nil, fmt.Errorf("derive: --profile full: full is always derived (every tool); name only the profiles below it")
		}
		if err := profiles.CheckProfileName(sp.Name); err != nil {
			return nil, fmt.Errorf("derive: --profile %q: %v", sp.Name, err)
		}
	}
	return specs, nil
}
