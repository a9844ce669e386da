package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PolicyFile is the name of the hand-written file beside the generated one.
const PolicyFile = "profiles.toml"

// PolicyPathFor returns where the hand-written policy for generatedPath
// lives: profiles.toml in the same directory.
func PolicyPathFor(generatedPath string) string {
	return filepath.Join(filepath.Dir(generatedPath), PolicyFile)
}

// Set is a generated file with its optional policy.
type Set struct {
	File       *File
	Policy     *Policy // nil when there is no profiles.toml
	Path       string  // generated file
	PolicyPath string  // "" when there is no profiles.toml
}

// Load reads the generated file at generatedPath and, when it exists, the
// profiles.toml beside it, and checks that they agree (the policy's default
// names a profile that exists). A missing generated file yields an error
// wrapping fs.ErrNotExist; a missing policy is not an error.
func Load(generatedPath string) (*Set, error) {
	f, _, err := loadFile(generatedPath)
	if err != nil {
		return nil, err
	}
	s := &Set{File: f, Path: generatedPath}
	pp := PolicyPathFor(generatedPath)
	p, loc, err := loadPolicy(pp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, err
	}
	s.Policy, s.PolicyPath = p, pp
	if err := s.check(loc); err != nil {
		return nil, err
	}
	return s, nil
}

// Names returns the sorted names of the profiles the set defines, "full"
// included.
func (s *Set) Names() []string {
	names := fileProfileNames(s.File)
	if s.Policy != nil {
		for _, pp := range s.Policy.Profiles {
			if !slices.Contains(names, pp.Name) {
				names = append(names, pp.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Default returns the profile served when none is asked for: the policy's
// default when set, else the generated one.
func (s *Set) Default() string {
	if s.Policy != nil && s.Policy.Default != "" {
		return s.Policy.Default
	}
	return s.File.Default
}

// check validates what only the two files together can tell.
func (s *Set) check(loc *keyLines) error {
	if s.Policy == nil {
		return nil
	}
	names := s.Names()
	for i, pp := range s.Policy.Profiles {
		if pp.AlwaysLoad != "" && (pp.AlwaysLoad == pp.Name || !slices.Contains(names, pp.AlwaysLoad)) {
			key := fmt.Sprintf("profile[%d].always_load", i)
			return &Error{File: s.PolicyPath, Line: loc.line(key), Key: key,
				Msg: fmt.Sprintf("%q is not another profile; valid profiles: %s", pp.AlwaysLoad, strings.Join(names, ", "))}
		}
	}
	if s.Policy.Default == "" {
		return nil
	}
	if !slices.Contains(names, s.Policy.Default) {
		return &Error{File: s.PolicyPath, Line: loc.line("default"), Key: "default",
			Msg: fmt.Sprintf("profile %q does not exist; valid profiles: %s", s.Policy.Default, strings.Join(names, ", "))}
	}
	return nil
}

// Resolved is a Set applied to the tools the upstreams offer: what each
// profile serves.
type Resolved struct {
	Default  string
	Profiles map[string]*ResolvedProfile // always includes "full" = every offered tool
	Groups   map[string]*Group           // tools filtered to offered ones, sorted
	Warnings []string                    // problems that do not stop serving, in a stable order
	// Tools is every offered tool name, sorted.
	Tools []string
	// Order is the profile names in file order: generated profiles, then
	// profiles defined only in profiles.toml, then "full".
	Order []string
	// SearchPriors are the generated file's ranking priors; nil when it
	// has none.
	SearchPriors *SearchPriors
	effects      map[string]Effect
}

// ResolvedProfile is one servable profile.
type ResolvedProfile struct {
	Name         string
	Tools        []string // sorted by name, only tools offered
	Instructions string
	// UpstreamInstructions says which upstreams' instructions follow the
	// profile's own (profiles.toml upstream_instructions).
	UpstreamInstructions UpstreamInstructions
	// Icons is profiles.toml's icons key for the profile: IconsKeep,
	// IconsDrop, or "" when it does not say (see DropsIcons).
	Icons    string
	Groups   []string
	ReadOnly bool
	// Search serves find_tools and call_tool over the tools Searchable
	// reports; SearchPatterns narrow them (empty: no narrowing).
	Search         bool
	SearchPatterns []string
	// AlwaysLoad is the profile whose tools this one marks for the client
	// to load up front (profiles.toml always_load); "" when none. Tools
	// then holds every offered tool the profile's rules allow.
	AlwaysLoad string
	Measured   *Measured
	// AllowDestructive is set for "full" and for profiles that profiles.toml
	// allows to hold destructive tools; it bounds what a group may switch on.
	AllowDestructive bool
	// Removed lists, by tool name, the offered tools the profile names (in
	// the generated file or pinned) that its destructive or read-only rule
	// removed. Resolve also warns of them, once per profile.
	Removed []Removal
	// members indexes Tools for the per-call gate; nil in a profile built
	// by hand, which falls back to binary search.
	members map[string]struct{}
	// denied holds the tools profiles.toml denies in the profile: no group
	// switches them on either.
	denied map[string]bool
}

// Has reports whether the profile holds tool.
func (p *ResolvedProfile) Has(tool string) bool {
	if p.members != nil {
		_, ok := p.members[tool]
		return ok
	}
	_, ok := slices.BinarySearch(p.Tools, tool)
	return ok
}

func (p *ResolvedProfile) index() {
	p.members = make(map[string]struct{}, len(p.Tools))
	for _, t := range p.Tools {
		p.members[t] = struct{}{}
	}
}

// mayHold reports whether the profile's destructive and read-only rules
// let it hold a tool of effect e.
func (p *ResolvedProfile) mayHold(e Effect) bool {
	if e.Kind == KindDestructive && !p.AllowDestructive {
		return false
	}
	return !p.ReadOnly || e.Kind.ReadOnly()
}

// GroupTools returns the tools that switching group on adds to a session of
// profile: the group's offered tools that the profile does not already hold
// and that its destructive and read-only rules and its deny list allow,
// sorted. The profile must offer the group.
func (r *Resolved) GroupTools(profile, group string) ([]string, error) {
	p, ok := r.Profiles[profile]
	if !ok {
		return nil, fmt.Errorf("no profile %q; valid profiles: %s", profile, strings.Join(r.Names(), ", "))
	}
	if !slices.Contains(p.Groups, group) {
		return nil, fmt.Errorf("profile %q does not offer group %q; it offers: %s", profile, group, listOrNone(p.Groups))
	}
	g, ok := r.Groups[group]
	if !ok {
		return nil, fmt.Errorf("no group %q", group)
	}
	var out []string
	for _, t := range g.Tools {
		if !p.Has(t) && !p.denied[t] && p.mayHold(r.effects[t]) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Names returns the profile names, sorted.
func (r *Resolved) Names() []string { return slices.Sorted(maps.Keys(r.Profiles)) }

// Allowed reports whether profile exists and holds tool.
func (r *Resolved) Allowed(profile, tool string) bool {
	p, ok := r.Profiles[profile]
	return ok && p.Has(tool)
}

// ProfilesWith returns the sorted names of the profiles that hold tool.
func (r *Resolved) ProfilesWith(tool string) []string {
	var out []string
	for _, name := range r.Names() {
		if r.Profiles[name].Has(tool) {
			out = append(out, name)
		}
	}
	return out
}

// Effect returns the effect of an offered tool; the zero Effect (Kind "")
// for a tool no upstream offers.
func (r *Resolved) Effect(tool string) Effect { return r.effects[tool] }

// Offers reports whether some upstream offers tool.
func (r *Resolved) Offers(tool string) bool {
	_, ok := r.effects[tool]
	return ok
}

// Full serves every tool as the single profile "full", for when there is
// no profiles file. Tools without a name or repeated are skipped.
func Full(tools []*mcp.Tool) *Resolved {
	r := &Resolved{Default: FullProfile, Profiles: map[string]*ResolvedProfile{}, Groups: map[string]*Group{}, effects: map[string]Effect{}}
	for _, t := range tools {
		if t == nil || t.Name == "" {
			continue
		}
		if _, dup := r.effects[t.Name]; dup {
			continue
		}
		r.effects[t.Name] = EffectOf(t, nil)
		r.Tools = append(r.Tools, t.Name)
	}
	slices.Sort(r.Tools)
	full := &ResolvedProfile{Name: FullProfile, Tools: slices.Clone(r.Tools), AllowDestructive: true}
	full.index()
	r.Profiles[FullProfile] = full
	r.Order = []string{FullProfile}
	return r
}

// Resolve applies the set to the offered tools. See the package comment for
// the merge rules. Tools must have distinct, non-empty names.
func (s *Set) Resolve(tools []*mcp.Tool) (*Resolved, error) {
	if s == nil || s.File == nil {
		return nil, fmt.Errorf("resolve profiles: no generated file")
	}
	policyName := s.PolicyPath
	if policyName == "" {
		policyName = PolicyFile
	}
	r := &Resolved{Profiles: map[string]*ResolvedProfile{}, Groups: map[string]*Group{}, effects: map[string]Effect{}}
	for i, t := range tools {
		switch {
		case t == nil || t.Name == "":
			return nil, fmt.Errorf("resolve profiles: offered tool %d has no name", i)
		case r.Offers(t.Name):
			return nil, fmt.Errorf("resolve profiles: tool %q offered twice; tool names must be unique across upstreams", t.Name)
		}
		r.effects[t.Name] = EffectOf(t, s.Policy)
		r.Tools = append(r.Tools, t.Name)
	}
	slices.Sort(r.Tools)
	warn := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }

	pol := s.Policy
	if pol == nil {
		pol = &Policy{}
	}
	for _, d := range pol.Destructive {
		if !isPattern(d) && !r.Offers(d) {
			warn("%s: destructive names tool %q that no upstream offers", policyName, d)
		}
	}
	for _, e := range pol.Effects {
		if !isPattern(e.Tool) && !r.Offers(e.Tool) {
			warn("%s: [[effect]] names tool %q that no upstream offers", policyName, e.Tool)
		}
	}
	policyFor := map[string]*PolicyProfile{}
	for i := range pol.Profiles {
		policyFor[pol.Profiles[i].Name] = &pol.Profiles[i]
	}

	// build merges one profile. gen is nil for a profile defined only in
	// profiles.toml.
	build := func(name string, gen *Profile, pp *PolicyProfile) *ResolvedProfile {
		rp := &ResolvedProfile{Name: name, UpstreamInstructions: upstreamInstructions(pol, pp)}
		members := map[string]bool{}
		pinned := map[string]bool{}
		if gen != nil {
			rp.Instructions, rp.ReadOnly, rp.Measured = gen.Instructions, gen.ReadOnly, gen.Measured
			rp.Groups = slices.Clone(gen.Groups)
			rp.Search, rp.SearchPatterns = gen.Search, slices.Clone(gen.Searchable)
			for _, t := range gen.Tools {
				if !r.Offers(t) {
					warn("profile %q names tool %q that no upstream offers", name, t)
					continue
				}
				members[t] = true
			}
		}
		if pp != nil {
			for _, t := range pp.Pin {
				if !r.Offers(t) {
					if gen != nil && slices.Contains(gen.Tools, t) {
						continue // already warned about
					}
					warn("profile %q names tool %q that no upstream offers (pinned in %s)", name, t, policyName)
					continue
				}
				members[t], pinned[t] = true, true
			}
			for _, t := range pp.Deny {
				if !r.Offers(t) {
					warn("profile %q denies tool %q that no upstream offers (%s); check the spelling", name, t, policyName)
				}
				delete(members, t)
				if rp.denied == nil {
					rp.denied = map[string]bool{}
				}
				rp.denied[t] = true
			}
			if pp.Instructions != nil {
				rp.Instructions = *pp.Instructions
			}
			rp.Icons = pp.Icons
			if pp.ReadOnly != nil {
				rp.ReadOnly = *pp.ReadOnly
			}
			rp.AllowDestructive = pp.AllowDestructive
			if pp.Search != nil {
				rp.Search = *pp.Search
			}
			if pp.Searchable != nil {
				rp.SearchPatterns = slices.Clone(pp.Searchable)
			}
			if rp.AlwaysLoad = pp.AlwaysLoad; rp.AlwaysLoad != "" {
				for _, t := range r.Tools {
					if !rp.denied[t] && rp.mayHold(r.effects[t]) {
						members[t] = true
					}
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(members)) {
			eff := r.effects[t]
			if eff.Kind == KindDestructive && !rp.AllowDestructive {
				rp.Removed = append(rp.Removed, Removal{Tool: t, Rule: RuleDestructive})
				continue
			}
			if rp.ReadOnly && !eff.Kind.ReadOnly() {
				rp.Removed = append(rp.Removed, Removal{Tool: t, Rule: RuleReadOnly})
				continue
			}
			rp.Tools = append(rp.Tools, t)
		}
		if len(rp.Removed) > 0 {
			warn("profile %q serves %d of the %d offered tools it names: %s", name, len(rp.Tools), len(members), DescribeRemovals(name, policyName, rp.Removed))
		}
		return rp
	}

	var genFull *Profile
	for i := range s.File.Profiles {
		p := &s.File.Profiles[i]
		if p.Name == FullProfile {
			genFull = p
			continue
		}
		r.Profiles[p.Name] = build(p.Name, p, policyFor[p.Name])
		r.Order = append(r.Order, p.Name)
	}
	for i := range pol.Profiles {
		pp := &pol.Profiles[i]
		if _, done := r.Profiles[pp.Name]; done || pp.Name == FullProfile {
			continue
		}
		rp := build(pp.Name, nil, pp)
		if len(rp.Tools) == 0 {
			warn("profile %q is defined only in %s and serves no tools (pin some, or check the name against the generated profiles: %s)", pp.Name, policyName, strings.Join(fileProfileNames(s.File), ", "))
		}
		r.Profiles[pp.Name] = rp
		r.Order = append(r.Order, pp.Name)
	}
	full := &ResolvedProfile{Name: FullProfile, Tools: slices.Clone(r.Tools), AllowDestructive: true,
		UpstreamInstructions: upstreamInstructions(pol, policyFor[FullProfile])}
	if genFull != nil {
		full.Instructions, full.Measured, full.Groups = genFull.Instructions, genFull.Measured, slices.Clone(genFull.Groups)
	}
	if pp := policyFor[FullProfile]; pp != nil {
		if pp.Instructions != nil {
			full.Instructions = *pp.Instructions
		}
		full.Icons = pp.Icons
	}
	r.Profiles[FullProfile] = full
	r.Order = append(r.Order, FullProfile)
	r.SearchPriors = s.File.Search
	for _, name := range r.Order {
		if al := r.Profiles[name].AlwaysLoad; al != "" && (al == name || r.Profiles[al] == nil || r.Profiles[al].AlwaysLoad != "") {
			return nil, fmt.Errorf("resolve profiles: %s: profile %q: always_load = %q: want another profile without always_load; valid profiles: %s", policyName, name, al, strings.Join(r.Order, ", "))
		}
	}

	for _, g := range s.File.Groups {
		rg := &Group{Name: g.Name, Description: g.Description}
		for _, t := range g.Tools {
			if !r.Offers(t) {
				warn("group %q names tool %q that no upstream offers", g.Name, t)
				continue
			}
			rg.Tools = append(rg.Tools, t)
		}
		slices.Sort(rg.Tools)
		r.Groups[g.Name] = rg
	}

	for _, name := range r.Order {
		p := r.Profiles[name]
		p.index()
		for _, g := range p.Groups {
			rg, ok := r.Groups[g]
			if !ok {
				continue
			}
			for _, t := range rg.Tools {
				switch {
				case p.Has(t):
				case p.denied[t]:
					warn("profile %q: group %q cannot switch on tool %q (denied in %s) in this profile", name, g, t, policyName)
				case !p.mayHold(r.effects[t]):
					warn("profile %q: group %q cannot switch on tool %q (%s) in this profile", name, g, t, r.effects[t].Kind)
				}
			}
		}
	}

	r.checkNesting(nestedFamily(s.File), warn)

	r.Default = s.Default()
	if _, ok := r.Profiles[r.Default]; !ok {
		return nil, fmt.Errorf("resolve profiles: default profile %q does not exist; valid profiles: %s", r.Default, strings.Join(r.Names(), ", "))
	}
	return r, nil
}
