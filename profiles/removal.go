package profiles

import (
	"fmt"
	"strings"
)

// The rules that keep a tool out of a profile that names it (in the
// generated file, or pinned in profiles.toml).
const (
	// RuleDestructive removes a destructive tool from a profile that
	// profiles.toml does not allow_destructive; full is always allowed.
	RuleDestructive = "destructive"
	// RuleReadOnly removes a tool that changes state from a read_only
	// profile.
	RuleReadOnly = "read_only"
)

// Removal is a tool a profile names but may not hold, and the rule that
// removed it.
type Removal struct {
	Tool string
	Rule string // RuleDestructive or RuleReadOnly
}

// AllowSetting returns the setting of a profile's [[profile]] table in
// profiles.toml that lets it hold the tools rule removes.
func AllowSetting(rule string) string {
	if rule == RuleReadOnly {
		return "read_only = false"
	}
	return "allow_destructive = true"
}

// DescribeRemovals says, rule by rule, which tools of removed the rule
// removed from profile and which setting of policyName (the profiles.toml
// path) would serve them; "" when nothing was removed. Every report of
// removed tools uses it, so they read alike.
func DescribeRemovals(profile, policyName string, removed []Removal) string {
	var clauses []string
	for _, rule := range []string{RuleDestructive, RuleReadOnly} {
		var tools []string
		for _, r := range removed {
			if r.Rule == rule {
				tools = append(tools, r.Tool)
			}
		}
		if len(tools) == 0 {
			continue
		}
		clauses = append(clauses, fmt.Sprintf("the %s rule removed %s (set %s under [[profile]] name = %q in %s to serve them)",
			rule, strings.Join(tools, ", "), AllowSetting(rule), profile, policyName))
	}
	return strings.Join(clauses, "; ")
}
