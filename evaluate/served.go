package evaluate

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"github.com/toolprof/toolprof/profiles"
)

// CheckServed refuses a chosen search arm that would be served other than
// it was measured. The arm is measured on its base as profiles.toml
// resolves it, but served as Profile's NAME-search, which profiles.toml's
// entries, keyed by name, reach only through an entry of that name: the
// base's read_only, deny, searchable or pin would not carry over, and a
// tool the base denies would become callable through call_tool. So the
// two entries must agree (both absent, or alike but for name and a search
// key, which may only say true): the operator copies the entry, never
// this code, since profiles.toml is theirs. Search over the derived base
// is held to the same rule with its start as the base and
// DerivedSearchProfile as the name: it was derived and measured under the
// start's entry.
func (c *Choice) CheckServed(set *profiles.Set) error {
	if c.Chosen.Name != ArmSearch || set == nil || set.Policy == nil {
		return nil
	}
	base, name := c.Chosen.Profile, c.Profile()
	if c.derived() {
		base = c.SearchBase.Start
	}
	entry := func(n string) int {
		return slices.IndexFunc(set.Policy.Profiles, func(p profiles.PolicyProfile) bool { return p.Name == n })
	}
	bi, si := entry(base), entry(name)
	if bi < 0 && si < 0 {
		return nil
	}
	var b, s profiles.PolicyProfile
	if bi >= 0 {
		b = set.Policy.Profiles[bi]
	}
	if si >= 0 {
		s = set.Policy.Profiles[si]
	}
	searches := s.Search == nil || *s.Search
	b.Name, s.Name, b.Search, s.Search = "", "", nil, nil
	if searches && reflect.DeepEqual(b, s) {
		return nil
	}
	file := cmp.Or(set.PolicyPath, profiles.PolicyFile)
	at := func(i int) (string, int) {
		key := fmt.Sprintf("profile[%d].name", i)
		return key, profiles.KeyLine(set.PolicyPath, key)
	}
	if si < 0 {
		key, line := at(bi)
		return &profiles.Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(
			"the chosen default, search over %q, would be served as profile %q, which this entry for %q does not reach: add a [[profile]] name = %q entry with the same keys as %q's (search may be left out), then derive again; nothing written",
			base, name, base, name, base)}
	}
	key, line := at(si)
	want := fmt.Sprintf("make its keys those of %q's entry (search may be left out or true)", base)
	if bi < 0 {
		want = fmt.Sprintf("remove it: %q has no entry, and the arm was measured so", base)
	}
	return &profiles.Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(
		"the chosen default, search over %q, would be served as profile %q under this entry, other than it was measured: %s, then derive again; nothing written",
		base, name, want)}
}
