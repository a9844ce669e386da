package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

// TestFindToolsDefinition checks that find_tools' tools/list entry tells
// the model the limits the gateway applies: the default it returns when
// the call gives none, the range a call's limit must fall in, and how to
// list the names and ask for one by name.
func TestFindToolsDefinition(t *testing.T) {
	var def struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			Properties struct {
				Limit struct {
					Minimum, Maximum int
				} `json:"limit"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(toolsearch.FindToolsDefinition), &def); err != nil {
		t.Fatal(err)
	}
	if def.Name != toolsearch.FindToolsName {
		t.Errorf("name %q, want %q", def.Name, toolsearch.FindToolsName)
	}
	if want := fmt.Sprintf("(default %d)", toolsearch.DefaultLimit); !strings.Contains(def.Description, want) {
		t.Errorf("description %q does not say %q", def.Description, want)
	}
	// A model whose search missed can list the names and ask by name.
	if want := fmt.Sprintf("Query %q lists", toolsearch.ListQuery); !strings.Contains(def.Description, want) {
		t.Errorf("description %q does not say %q", def.Description, want)
	}
	if l := def.InputSchema.Properties.Limit; l.Minimum != 1 || l.Maximum != toolsearch.MaxLimit {
		t.Errorf("limit's range %d to %d, want 1 to %d", l.Minimum, l.Maximum, toolsearch.MaxLimit)
	}
}
