package opcontext

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReplacementKeepingTimeIsSeen: a sidecar replaced by one of the same
// size that keeps the old modification time (renamed over it, as cp -p,
// rsync -t or a fixed-time store leave it) is read: a project dropped from
// a reject-mode registry is refused on the next write.
func TestReplacementKeepingTimeIsSeen(t *testing.T) {
	dir := t.TempDir()
	at := time.Now().Add(-time.Hour) // long past: not re-read as racy
	write := func(path, project string) {
		content := "version = 1\n[registry]\nproject_ids = [\"" + project + "\"]\nenforce = \"reject\"\n"
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "oc.toml")
	write(p, "acme-app")
	s := sourceAt(t, p, nil)
	call := CallInfo{Tool: "save", Writes: true, InputSchema: writeSchema, Arguments: json.RawMessage(`{"project_id":"acme-app","content":"x"}`)}
	if d, err := s.Check(context.Background(), call); err != nil || d.Rejected() {
		t.Fatalf("a listed project is refused: %q, %v", d.Reject, err)
	}
	next := filepath.Join(dir, "next.toml")
	write(next, "acme-new") // the same size
	if err := os.Rename(next, p); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Check(context.Background(), call); err != nil || !d.Rejected() {
		t.Errorf("the project dropped from the registry is still accepted (%v)", err)
	}
}
