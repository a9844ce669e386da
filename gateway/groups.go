package gateway

// Tool groups. A profile that offers groups lists one extra tool,
// enable_tools, exactly as profiles.EnableToolsTool builds it over the
// profile's groups (the derivation prices that definition, so the served one
// must be the same bytes; it carries no effect _meta for that reason).
// Calling it with a group name switches the group on for that session only:
// the session's callable and listed tools grow by what
// profiles.Resolved.GroupTools allows (destructive and read_only rules),
// less mutating tools under --read-only, and the session alone is sent
// notifications/tools/list_changed. A group any of whose added tools lies
// outside the operator's ceiling (--max-profile) or the request's token's
// ceiling is refused whole with group_not_allowed. A call to a tool an
// offered, allowed group would add is refused with tool_not_in_profile,
// whose message and first suggested action name the group to switch on.
//
// Listing order is append-only, which keeps tools/list cursors consistent
// when a group is switched on mid-session: enable_tools, then the profile's
// tools by name, then each switched-on group's added tools in switch order.
// A cursor minted before a switch still points at the same place, and
// paging on from it returns the rest of the old list followed by the new
// tools, so the pages joined hold every tool once.
//
// Sending list_changed to one session: the SDK has no public call for it
// (its own list_changed goes to every session of a server). The gateway
// sends a marked progress notification through the session
// (ServerSession.NotifyProgress), and its sending middleware
// (groupsSending) rewrites that one message into
// notifications/tools/list_changed on the same session, on the enable_tools
// call's own stream (over HTTP, the call's response stream, before the
// result). Requests of protocol 2026-07-28 or later are offered no groups
// (stateless.go), so no session of theirs is sent one.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// CodeGroupNotAllowed: enable_tools named a group the profile offers, but
// switching it on would add a tool outside the operator's ceiling
// (--max-profile) or the ceiling of the request's token. Nothing is
// switched on. Category "policy", not retryable.
const CodeGroupNotAllowed = "group_not_allowed"

// The real recorder records switches too.
var _ Recorder = (*telemetry.Recorder)(nil)

// Method names the groups code sends or watches.
const (
	notificationToolsListChanged = "notifications/tools/list_changed"
	notificationProgress         = "notifications/progress"
)

// sessionGroups is one session's switched-on groups.
type sessionGroups struct {
	mu sync.Mutex
	on []string // groups switched on, in switch order
	// added are the tools the groups add, in switch order without repeats,
	// as computed for the catalog cat; recomputed when the catalog changes.
	cat   *catalogState
	added []string
	// enable is the enable_tools definition built for enableCat, kept so
	// that each listing does not build it again.
	enable    *mcp.Tool
	enableCat *catalogState
}

// offeredTo returns the groups offered to session s, as package policy
// decides them: none for a sessionless one (its list may not change as a
// side effect of its requests), nor when an upstream offers a tool named
// enable_tools.
func (g *Gateway) offeredTo(s *session) []profiles.Group {
	return g.policySnapshot(g.cat()).OfferedGroups(&policy.State{Profile: s.profile, Sessionless: s.sessionless})
}

// groupAdds returns the tools switching group on adds to a session of
// profile: GroupTools, less those not read or evaluate when the profile is
// served read-only; and those of them outside the ceiling.
func (g *Gateway) groupAdds(profile, group string) (adds, beyond []string, err error) {
	return g.policySnapshot(g.cat()).GroupAdds(profile, group)
}

// switchedTools returns the tools s's switched-on groups add, in switch
// order, for the current catalog. A tool that has since left the ceiling
// (the catalog changed) is left out.
func (g *Gateway) switchedTools(s *session) []string {
	sg := &s.groups
	sg.mu.Lock()
	defer sg.mu.Unlock()
	return g.switchedLocked(s.profile, sg)
}

func (g *Gateway) switchedLocked(profile string, sg *sessionGroups) []string {
	cat := g.cat()
	if sg.cat == cat || len(sg.on) == 0 {
		return sg.added
	}
	sg.cat, sg.added = cat, nil
	for _, name := range sg.on {
		adds, _, err := g.groupAdds(profile, name)
		if err != nil {
			continue // the group left the profile with the catalog's profiles
		}
		for _, t := range adds {
			if (g.opts.MaxProfile == "" || cat.resolved.Allowed(g.opts.MaxProfile, t)) && !slices.Contains(sg.added, t) {
				sg.added = append(sg.added, t)
			}
		}
	}
	return sg.added
}

// sessionListed returns the names s lists, in listing order, and the
// enable_tools definition when its profile offers groups (nil otherwise).
// Without groups it is the profile's listing, unchanged.
func (g *Gateway) sessionListed(s *session) ([]string, *mcp.Tool) {
	base := g.withSearchTools(s.profile, g.cat().listed[s.profile]) // search.go
	offered := g.offeredTo(s)
	if offered == nil {
		return base, nil
	}
	sg := &s.groups
	sg.mu.Lock()
	added := g.switchedLocked(s.profile, sg)
	if cat := g.cat(); sg.enableCat != cat {
		sg.enable, sg.enableCat = profiles.EnableToolsTool(offered), cat
	}
	enable := sg.enable
	sg.mu.Unlock()
	names := make([]string, 0, 1+len(base)+len(added))
	names = append(names, profiles.EnableToolsName)
	names = append(names, base...)
	names = append(names, added...)
	return names, enable
}

// listedTool is the definition of a name sessionListed returned.
func (g *Gateway) listedTool(name string, enable *mcp.Tool) (*mcp.Tool, bool) {
	if enable != nil && name == profiles.EnableToolsName {
		return enable, true
	}
	if t, ok := g.cat().served[name]; ok {
		return t, true
	}
	return g.searchTool(name)
}

// notAllowed is the envelope for a call a session of profile may not make:
// tool_not_in_profile, naming first grp, the group to switch on, when one
// would allow it (policy.Decision.Group).
func (g *Gateway) notAllowed(snap *policy.Snapshot, profile, tool, grp string) Envelope {
	env := g.notInProfile(snap, profile, tool)
	if grp == "" {
		return env
	}
	env.Message += fmt.Sprintf("; group %q of this profile holds it: call %s with {\"group\": %q} to switch it on for this session", grp, profiles.EnableToolsName, grp)
	env.SuggestedActions = append([]string{enableAction(grp)}, env.SuggestedActions...)
	return env
}

// enableAction is the suggested action switching group on.
func enableAction(group string) string {
	return fmt.Sprintf("call %s with {\"group\": %q} to switch on group %q for this session", profiles.EnableToolsName, group, group)
}

// enableTools answers a call to enable_tools; ok is false for any other
// tool, or when the session's profile offers no groups. It sets the call's
// outcome.
func (g *Gateway) enableTools(ctx context.Context, snap *policy.Snapshot, s *session, req mcp.Request, params *mcp.CallToolParamsRaw, call *telemetry.Call) (res *mcp.CallToolResult, ok bool) {
	if params == nil || params.Name != profiles.EnableToolsName {
		return nil, false
	}
	offered := g.offeredTo(s)
	if offered == nil {
		return nil, false
	}
	call.Outcome = telemetry.OutcomeDenied
	names := make([]string, len(offered))
	for i, grp := range offered {
		names[i] = grp.Name
	}
	var args struct {
		Group *string `json:"group"`
	}
	if len(params.Arguments) > 0 {
		if err := json.Unmarshal(params.Arguments, &args); err != nil {
			return invalidGroup(fmt.Sprintf("%s: \"group\" must be a string (%v)", profiles.EnableToolsName, err), names), true
		}
	}
	if args.Group == nil || *args.Group == "" {
		return invalidGroup(fmt.Sprintf("%s: missing \"group\"", profiles.EnableToolsName), names), true
	}
	group := *args.Group
	if !slices.Contains(names, group) {
		return invalidGroup(fmt.Sprintf("%s: profile %q offers no group %q", profiles.EnableToolsName, s.profile, group), names), true
	}
	_, beyond, err := snap.GroupAdds(s.profile, group)
	if err != nil {
		return invalidGroup(fmt.Sprintf("%s: %v", profiles.EnableToolsName, err), names), true
	}
	if len(beyond) > 0 {
		return groupBeyondCeiling(snap, s, group, beyond, names).result(), true
	}

	sg := &s.groups
	sg.mu.Lock()
	if slices.Contains(sg.on, group) {
		sg.mu.Unlock()
		call.Outcome = telemetry.OutcomeOK
		return profiles.EnableToolsResult(group, nil), true
	}
	before := len(g.switchedLocked(s.profile, sg))
	sg.on = append(sg.on, group)
	sg.cat = nil // recompute with the new group
	added := slices.Clone(g.switchedLocked(s.profile, sg)[before:])
	ss, _ := req.GetSession().(*mcp.ServerSession)
	notify := len(added) > 0 && ss != nil
	sg.mu.Unlock()

	sw := telemetry.Switch{Time: time.Now(), Group: group}
	s.mu.Lock()
	s.rec.Switches = append(s.rec.Switches, sw)
	id := s.rec.ID
	s.mu.Unlock()
	if g.opts.Recorder != nil {
		g.opts.Recorder.Switch(id, sw)
	}
	if notify {
		if err := g.notifyListChanged(ctx, ss); err != nil {
			g.logger.Warn("tools/list_changed after enable_tools not sent", "group", group, "error", err)
		}
	}
	g.logger.Debug("group switched on", "session", id, "group", group, "added", len(added))
	call.Outcome = telemetry.OutcomeOK
	return profiles.EnableToolsResult(group, added), true
}

// invalidGroup is the invalid_arguments envelope of an enable_tools call,
// listing the offered groups.
func invalidGroup(msg string, offered []string) *mcp.CallToolResult {
	return Envelope{
		Code:      CodeInvalidArguments,
		Message:   msg + "; groups offered: " + strings.Join(offered, ", "),
		Retryable: false,
		Category:  CategoryValidation,
		SuggestedActions: []string{
			fmt.Sprintf("call %s with {\"group\": NAME}, NAME one of: %s", profiles.EnableToolsName, strings.Join(offered, ", ")),
		},
	}.result()
}

// groupBeyondCeiling is the envelope refusing a group that would add tools
// outside snap's ceilings.
func groupBeyondCeiling(snap *policy.Snapshot, s *session, group string, beyond, offered []string) Envelope {
	var others []string
	for _, name := range offered {
		if name == group {
			continue
		}
		if _, b, err := snap.GroupAdds(s.profile, name); err == nil && len(b) == 0 {
			others = append(others, name)
		}
	}
	actions := []string{raiseCeilingAction(snap, beyond)}
	if len(others) > 0 {
		actions = append([]string{"switch on a group within the ceiling instead: " + strings.Join(others, ", ")}, actions...)
	}
	return Envelope{
		Code: CodeGroupNotAllowed,
		Message: fmt.Sprintf("group %q cannot be switched on: it would add %s, outside %s; nothing was switched on",
			group, strings.Join(quoteAll(beyond), ", "), ceilingText(snap)),
		Retryable:        false,
		Category:         CategoryPolicy,
		SuggestedActions: actions,
	}
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// sendAsKey marks a context whose progress notification groupsSending
// rewrites into the params it carries (a *mcp.ToolListChangedParams).
type sendAsKey struct{}

// notifyListChanged sends notifications/tools/list_changed to ss alone,
// with ctx (the enable_tools call's).
func (g *Gateway) notifyListChanged(ctx context.Context, ss *mcp.ServerSession) error {
	return ss.NotifyProgress(context.WithValue(ctx, sendAsKey{}, &mcp.ToolListChangedParams{}), &mcp.ProgressNotificationParams{})
}

// groupsSending is the sending middleware of every server: it turns the
// marked progress notification of notifyListChanged into
// tools/list_changed.
func (g *Gateway) groupsSending() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if p, ok := ctx.Value(sendAsKey{}).(*mcp.ToolListChangedParams); ok && method == notificationProgress && ss != nil {
				return next(ctx, notificationToolsListChanged, &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: p})
			}
			return next(ctx, method, req)
		}
	}
}

// serveGroups prepares server, which serves profile: the sending middleware,
// and a warning when the profile's groups cannot be served.
func (g *Gateway) serveGroups(server *mcp.Server, profile string) {
	server.AddSendingMiddleware(g.groupsSending())
	p, ok := g.cat().resolved.Profiles[profile]
	if !ok || len(p.Groups) == 0 {
		return
	}
	if _, clash := g.cat().tools[profiles.EnableToolsName]; clash {
		g.logger.Warn("profile offers groups, but an upstream offers a tool named "+profiles.EnableToolsName+": serving the upstream's tool and no groups", "profile", profile)
	}
}
