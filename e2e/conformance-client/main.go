// Command conformance-client is the client the MCP conformance suite
// drives (`conformance client --command bin/conformance-client`): it is
// run with the scenario's server URL as its argument and the scenario in
// MCP_CONFORMANCE_SCENARIO (MCP_CONFORMANCE_CONTEXT: its parameters, such
// as a pre-registered client), connects as the gateway connects to an
// upstream, lists the tools and calls the scenario's tool.
//
// It is toolprof's own upstream code under test, not a client of its own:
// an upstream.Client built from a launch entry, for auth/* scenarios with
// "oauth", the OAuth handler and a token store in a temporary directory.
// An auth/* scenario first logs in as `profiler login` does
// (upstream.Login), then connects a Client without a login flow, as the
// gateway does; when that one needs a login (a step-up), it logs in again
// and retries once, as an operator would. The one part only tests have is
// the code fetcher, fakeoauth.Approve, which follows the authorization
// server's redirect as a browser would where a person would approve.
//
// Exit status: 0 when the scenario ran, 1 when it failed, 2 on a usage
// error (no URL, unknown scenario).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/fakeoauth"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
	"github.com/toolprof/toolprof/upstream"
)

// redirectURL is where the conformance authorization server sends the
// code; Approve reads it from the redirect without following it.
const redirectURL = "http://localhost:3000/callback"

// clientMetadataURL is the client ID metadata document the conformance
// authorization server accepts (auth/basic-cimd).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// call is a tool call a scenario makes after listing the tools.
type call struct {
	tool string
	args map[string]any
}

// scenarios are the non-auth scenarios run; every auth/* scenario lists
// the tools and calls test-tool.
var scenarios = map[string]call{
	"initialize":                          {},
	"tools_call":                          {tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}},
	"elicitation-sep1034-client-defaults": {tool: "test_client_elicitation_defaults"},
	"sse-retry":                           {tool: "test_reconnection"},
}

func main() {
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if len(os.Args) != 2 || name == "" {
		fmt.Fprintln(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=NAME conformance-client SERVER_URL")
		os.Exit(2)
	}
	c, ok := scenarios[name]
	if strings.HasPrefix(name, "auth/") {
		c, ok = call{tool: "test-tool"}, true
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "conformance-client: unknown scenario %q; known: auth/*, %s\n", name, strings.Join(slices.Sorted(maps.Keys(scenarios)), ", "))
		os.Exit(2)
	}
	var cfg map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "conformance-client: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			os.Exit(2)
		}
	}
	if err := run(context.Background(), os.Args[1], strings.HasPrefix(name, "auth/"), c, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "conformance-client: scenario %s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL string, oauth bool, c call, cfg map[string]any) error {
	srv, err := server(serverURL, oauth, cfg)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "conformance-client-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opts := upstream.Options{
		Implementation:  &mcp.Implementation{Name: "toolprof-conformance", Version: "1"},
		ProtocolVersion: upstream.ProtocolVersion,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, nil)),
		ConnectTimeout:  20 * time.Second, // inside the runner's 30s
		Tokens:          oauthstore.Open(filepath.Join(dir, "tokens.json")),
		OnElicit:        acceptDefaults,
	}
	flow := upstream.LoginFlow{RedirectURL: redirectURL, Fetch: fakeoauth.Approve}
	login := func() error {
		if err := upstream.Login(ctx, srv, opts, flow); err != nil {
			return fmt.Errorf("login: %w", err)
		}
		return nil
	}
	// again runs op once more after a login when it failed needing one,
	// as an operator runs profiler login when the gateway says so.
	again := func(op func() error) error {
		err := op()
		var ue *upstream.UnauthorizedError
		if oauth && errors.As(err, &ue) {
			if err := login(); err != nil {
				return err
			}
			err = op()
		}
		return err
	}
	if oauth {
		if err := login(); err != nil { // profiler login
			return err
		}
	}
	client := upstream.NewClient(srv, opts) // the gateway's: no login flow
	defer client.Close()
	if err := client.Start(ctx); err != nil {
		return err
	}
	var tools []*mcp.Tool
	if err := again(func() (err error) { tools, err = client.ListTools(ctx); return err }); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if c.tool == "" {
		return nil
	}
	if !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == c.tool }) {
		return fmt.Errorf("tools/list: no tool %q", c.tool)
	}
	if c.args == nil {
		c.args = map[string]any{}
	}
	args, err := json.Marshal(c.args)
	if err != nil {
		return err
	}
	var res *mcp.CallToolResult
	call := func() (err error) {
		res, err = client.CallTool(ctx, &mcp.CallToolParamsRaw{Name: c.tool, Arguments: args})
		return err
	}
	if err := again(call); err != nil {
		return fmt.Errorf("tools/call %s: %w", c.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("tools/call %s: the tool returned an error", c.tool)
	}
	return nil
}

// server is the launch entry of the scenario's server, decoded and
// resolved as a launch document's: with "oauth" for auth/* scenarios, and
// the pre-registered client of MCP_CONFORMANCE_CONTEXT as
// ${CONFORMANCE_CLIENT_SECRET} (a secret, scrubbed from errors).
func server(serverURL string, oauth bool, cfg map[string]any) (launch.ResolvedServer, error) {
	entry := map[string]any{"type": "http", "url": serverURL}
	env := map[string]string{}
	if oauth {
		o := map[string]any{"client_metadata_url": clientMetadataURL}
		if id, ok := cfg["client_id"].(string); ok {
			o["client_id"] = id
			if secret, ok := cfg["client_secret"].(string); ok {
				o["client_secret"] = "${CONFORMANCE_CLIENT_SECRET}"
				env["CONFORMANCE_CLIENT_SECRET"] = secret
			}
		}
		entry["oauth"] = o
	}
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"conformance": entry}})
	if err != nil {
		return launch.ResolvedServer{}, err
	}
	servers, err := launch.Decode("conformance.mcp.json", data)
	if err != nil {
		return launch.ResolvedServer{}, err
	}
	doc := launch.Document{Version: launch.Version, Servers: servers}
	resolved, err := doc.Resolve(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return launch.ResolvedServer{}, err
	}
	return resolved.Servers[0], nil
}

// acceptDefaults stands for the gateway's caller, to which the gateway
// relays an upstream's elicitation as it is: a user who accepts the form
// as shown, its defaults filled in as the caller's SDK fills them.
func acceptDefaults(_ context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("elicitation/create: requestedSchema: %w", err)
	}
	content := map[string]any{}
	for name, prop := range schema.Properties {
		if prop.Default != nil {
			content[name] = prop.Default
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}
