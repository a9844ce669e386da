package generate

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/internal/golden"
)

// TestRunSessiongenGolden: derive on a sessiongen telemetry directory
// writes the same bytes as recorded, so that a faster read or derive
// shows it changed nothing of the file (go test -run TestRunSessiongenGolden
// -update rewrites it, as a diff in the commit).
func TestRunSessiongenGolden(t *testing.T) {
	cfg := benchTelemetry(t, 3000)
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "sessiongen.profiles.generated.toml"), out.Encoded)
}
