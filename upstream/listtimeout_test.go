package upstream

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestListToolsServesKnownToolsOfAnUpstreamThatStopsAnswering: an upstream
// that answered tools/list once and then never again is bounded by its
// ConnectTimeout: the Set's listing returns, with that upstream's tools as
// last listed and the other upstream's new listing, and health says why
// until a listing succeeds again.
func TestListToolsServesKnownToolsOfAnUpstreamThatStopsAnswering(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "hang")
	doc := resolve(t, `{"mcpServers": {
		"hang": `+stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": "h", "HELPER_TOOLS": "slow", "HELPER_LIST_HANG_GATE": gate})+`,
		"live": `+stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": "l", "HELPER_TOOLS": "quick"})+`}}`, nil)
	set, err := StartSet(context.Background(), doc, SetOptions{RequireAll: true, Client: Options{ConnectTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	// The guard only turns a hang into a failure: the listing must come
	// back, and well before it, through the upstream's own bound.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	names := func() []string {
		t.Helper()
		tools, err := set.ListTools(ctx)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	listError := func(server string) string {
		i := slices.IndexFunc(set.Health(), func(h Health) bool { return h.Name == server })
		return set.Health()[i].ListError
	}
	before := names()
	if !slices.Contains(before, "hang__slow") || !slices.Contains(before, "live__quick") {
		t.Fatalf("setup: listed %v, want hang__slow and live__quick among them", before)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, before) {
		t.Errorf("while hang does not answer tools/list: listed %v, want the tools last listed %v", got, before)
	}
	if got := listError("hang"); !strings.Contains(got, "tools/list not answered within") {
		t.Errorf("health list_error of hang = %q, want it to say tools/list was not answered", got)
	}
	if got := listError("live"); got != "" {
		t.Errorf("health list_error of live = %q, want none", got)
	}
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	names()
	if got := listError("hang"); got != "" {
		t.Errorf("after hang answered again, health list_error = %q, want none", got)
	}
}

// TestListErrorLeavesDownUpstreamsToTheirState: a listing that fails
// because its upstream is down sets no list_error: the state and last
// error tell it.
func TestListErrorLeavesDownUpstreamsToTheirState(t *testing.T) {
	doc := resolve(t, `{"mcpServers": {
		"gone": `+stdioEntry(filepath.Join(t.TempDir(), "no-such-server"), nil)+`,
		"live": `+helperEntry(t, "l", "quick", 0)+`}}`, nil)
	set, err := StartSet(context.Background(), doc, SetOptions{StartWait: time.Minute}) // until both first attempts end
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	if _, err := set.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, h := range set.Health() {
		if h.Name == "gone" && (h.State == StateReady || h.ListError != "") {
			t.Errorf("gone: state %s, list_error %q; want not ready and no list_error", h.State, h.ListError)
		}
	}
}
