// Package testupstream builds and describes the real MCP servers that tests
// run as upstreams: the go-sdk's conformance everything-server, built from the
// module cache at the version go.mod pins.
package testupstream

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// EverythingServerPkg is the import path of the go-sdk's conformance server.
const EverythingServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// builds memoises one build per test binary: every test in a package shares it.
type builds struct {
	once sync.Once
	path string
	err  error
}

var (
	everything builds // one per test process; written once under sync.Once
	icons      builds
	gated      builds
	echo       builds
)

// EverythingServer returns the path of a freshly built everything-server
// binary (stdio by default; "-http ADDR" for streamable HTTP). It fails the
// test if the build fails.
func EverythingServer(t testing.TB) string {
	t.Helper()
	return everything.get(t, "everything-server", EverythingServerPkg)
}

// IconServerPkg is the import path of a stdio server whose tools carry
// icons (iconserver/main.go).
const IconServerPkg = "github.com/toolprof/toolprof/internal/testupstream/iconserver"

// IconServer returns the path of a freshly built iconserver binary. It
// fails the test if the build fails.
func IconServer(t testing.TB) string {
	t.Helper()
	return icons.get(t, "iconserver", IconServerPkg)
}

// GatedServerPkg is the import path of a stdio server whose initialize
// and tools/list wait on files the test creates (gatedserver/main.go).
const GatedServerPkg = "github.com/toolprof/toolprof/internal/testupstream/gatedserver"

// GatedServer returns the path of a freshly built gatedserver binary. It
// fails the test if the build fails.
func GatedServer(t testing.TB) string {
	t.Helper()
	return gated.get(t, "gatedserver", GatedServerPkg)
}

// EchoServerPkg is the import path of a stdio server that repeats the
// value of its ECHO_CONFIG variable in its instructions and a tool's
// description (echoserver/main.go).
const EchoServerPkg = "github.com/toolprof/toolprof/internal/testupstream/echoserver"

// EchoServer returns the path of a freshly built echoserver binary. It
// fails the test if the build fails.
func EchoServer(t testing.TB) string {
	t.Helper()
	return echo.get(t, "echoserver", EchoServerPkg)
}

// get builds pkg once per test process as name in a temporary directory.
func (b *builds) get(t testing.TB, name, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "toolprof-upstream-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		b.err = Build(pkg, b.path)
	})
	if b.err != nil {
		t.Fatalf("build %s: %v", name, b.err)
	}
	return b.path
}

// Build runs "go build -o out pkg" from this module, so pkg resolves at the
// version go.mod pins.
func Build(pkg, out string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v: %s", pkg, err, stderr.String())
	}
	return nil
}

// EverythingTools are the tool names the everything-server offers, in the
// order it registers them (tools/list sorts them by name).
var EverythingTools = []string{
	"json_schema_2020_12_tool",
	"test_audio_content",
	"test_elicitation",
	"test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums",
	"test_embedded_resource",
	"test_error_handling",
	"test_image_content",
	"test_input_required_result_capabilities",
	"test_input_required_result_elicitation",
	"test_input_required_result_list_roots",
	"test_input_required_result_multi_round",
	"test_input_required_result_multiple_inputs",
	"test_input_required_result_request_state",
	"test_input_required_result_sampling",
	"test_input_required_result_tampered_state",
	"test_logging_tool",
	"test_missing_capability",
	"test_multiple_content_types",
	"test_reconnection",
	"test_sampling",
	"test_simple_text",
	"test_streaming_elicitation",
	"test_tool_with_logging",
	"test_tool_with_progress",
	"test_trigger_prompt_change",
	"test_trigger_tool_change",
	"test_x_mcp_header",
}
