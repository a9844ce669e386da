package bench

import (
	"bytes"
	"fmt"
	"os"

	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// Baseline holds the earlier figures a report is compared against.
type Baseline struct {
	// Source names where the figures came from (the file path).
	Source string
	// Entries is set when the figures are sums of the tools' own entries
	// (a profiles file's measured figures, from the derivation) rather than
	// whole exchanges; the comparison then sums entries too.
	Entries bool
	// Wire is set when the figures are wire tokens: a JSON report written
	// before reports had the model measure.
	Wire     bool
	Profiles map[string]BaselineProfile
}

// BaselineProfile is one profile's earlier figures.
type BaselineProfile struct {
	Tools       int
	Bytes       int
	TokensO200k int
}

// LoadBaseline reads an earlier JSON report (profiler bench --format json)
// or a profiles file, whose [profile.measured] tables hold the figures
// measured when it was derived. A profile without measured figures in a
// profiles file is left out of the baseline.
func LoadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	b := &Baseline{Source: path, Profiles: map[string]BaselineProfile{}}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		r, err := DecodeReport(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("baseline %s: %w", path, err)
		}
		for _, p := range r.Profiles {
			tokens := p.modelTokens()
			if p.Model == nil {
				b.Wire, tokens = true, p.Tokens[price.O200kBase]
			}
			b.Profiles[p.Name] = BaselineProfile{Tools: p.Tools, Bytes: p.Bytes, TokensO200k: tokens}
		}
		return b, nil
	}
	f, err := profiles.DecodeFile(bytes.NewReader(data), path)
	if err != nil {
		return nil, fmt.Errorf("baseline (want a JSON report or a profiles file): %w", err)
	}
	b.Entries = true
	if len(f.Profiles) == 0 {
		return nil, fmt.Errorf("baseline %s: no [[profile]] tables (want a profiles file or a JSON report)", path)
	}
	for _, p := range f.Profiles {
		if p.Measured == nil {
			continue
		}
		b.Profiles[p.Name] = BaselineProfile{Tools: p.Measured.Tools, Bytes: p.Measured.Bytes, TokensO200k: p.Measured.TokensO200k}
	}
	return b, nil
}
