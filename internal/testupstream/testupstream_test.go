package testupstream

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEverythingTools pins EverythingTools to what the built server lists.
func TestEverythingTools(t *testing.T) {
	bin := EverythingServer(t)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var got []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, EverythingTools) {
		t.Errorf("tools = %q\nwant %q", got, EverythingTools)
	}
}
