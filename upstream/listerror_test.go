package upstream

import (
	"context"
	"testing"
	"time"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
)

// An HTTP upstream whose tools/list is answered 503 (a transient status:
// the SDK keeps the session) stays ready with its listing failed: the Set
// says so in ListError, which is what the gateway retries a listing on.
// The 503 is a fake's (a real SDK server behind a failing gate): a real
// server cannot be made to answer it on purpose.
func TestTransientListFailureIsAListError(t *testing.T) {
	url, failList := testupstream.WarmingServer(t, "transient")
	doc := launch.Document{Servers: []launch.Server{{Name: "h", Transport: launch.StreamableHTTP, URL: url, Source: "x.mcp.json:1"}}}
	r, err := doc.Resolve(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	failList.Store(true)
	set, err := StartSet(context.Background(), r, SetOptions{StartWait: 10 * time.Second, Client: Options{ConnectTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	if _, err := set.List(context.Background()); err == nil {
		t.Fatal("listing succeeded while tools/list answers 503")
	}
	hs := set.Health()
	if hs[0].State != StateReady || hs[0].ListError == "" {
		t.Errorf("after a 503 to tools/list h is %s with list_error %q; want ready, with one", hs[0].State, hs[0].ListError)
	}
	failList.Store(false)
	if _, err := set.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hs := set.Health(); hs[0].ListError != "" {
		t.Errorf("after a listing that succeeded list_error is %q, want none", hs[0].ListError)
	}
}
