package profiles

import (
	"fmt"
	"strings"
)

// nestedFamily returns the generated file's profiles that the derivation
// built as one nested family, smallest first, or nil when the file does not
// say. A family member is a profile that the provenance's parameters name
// with a "profile.NAME.target" or "profile.NAME.budget_tokens" key (derive
// writes one per spec it solved); the family's order is the order the
// generated file lists them in, which derive writes smallest first. full is
// left out: it holds every offered tool, so nothing can fall outside it.
func nestedFamily(f *File) []string {
	if f == nil || f.Provenance == nil {
		return nil
	}
	specs := map[string]bool{}
	for _, p := range f.Provenance.Parameters {
		key, _, ok := strings.Cut(p, "=")
		rest, isProfile := strings.CutPrefix(key, "profile.")
		if !ok || !isProfile {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		switch rest[i+1:] {
		case "target", "budget_tokens":
			specs[rest[:i]] = true
		}
	}
	var family []string
	for _, p := range f.Profiles {
		if specs[p.Name] && p.Name != FullProfile {
			family = append(family, p.Name)
		}
	}
	return family
}

// checkNesting warns, for each neighbouring pair of the nested family, about
// the tools the smaller profile serves that the larger one does not: a pin
// only in the smaller, a deny only in the larger, or a destructive or
// read-only rule set for one of them alone.
func (r *Resolved) checkNesting(family []string, warn func(string, ...any)) {
	for i := 1; i < len(family); i++ {
		small, large := r.Profiles[family[i-1]], r.Profiles[family[i]]
		if small == nil || large == nil {
			continue
		}
		var extra []string
		for _, t := range small.Tools {
			if !large.Has(t) {
				extra = append(extra, fmt.Sprintf("%q", t))
			}
		}
		if len(extra) == 0 {
			continue
		}
		it := "it"
		if len(extra) > 1 {
			it = "them"
		}
		warn("profile %q holds %s that %q does not: profiles derived as a nested family are no longer nested (pin %s in %q too, or deny %s in %q)",
			small.Name, strings.Join(extra, ", "), large.Name, it, large.Name, it, small.Name)
	}
}
