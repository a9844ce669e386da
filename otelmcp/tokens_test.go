package otelmcp

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/toolprof/toolprof/price"
)

// TestListingMeasuredOnce: requests that list the same page at once
// measure it once between them, the others waiting for that measure; a
// measure that fails reaches those waiting and is not kept, so the next
// listing measures again.
func TestListingMeasuredOnce(t *testing.T) {
	page := []json.RawMessage{
		json.RawMessage(`{"name":"read","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}`),
		json.RawMessage(`{"name":"list","description":"List a directory.","inputSchema":{"type":"object"}}`),
	}
	boom := errors.New("boom")
	cases := []struct {
		name      string
		fail      error // what the measure returns instead of its figure
		wantAfter int64 // measures once a later listing of the page is served too
	}{
		{"measured", nil, 1},
		{"failed", boom, 2},
	}
	const callers = 8
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := newListingMeasure()
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.measure(page)
			if err != nil || want <= 0 {
				t.Fatalf("measure = %d, %v; want a positive figure", want, err)
			}
			model := m.model
			synctest.Test(t, func(t *testing.T) {
				var measures atomic.Int64
				release := make(chan struct{})
				m.model = func(tools []price.Tool) (int, error) {
					measures.Add(1)
					<-release
					if c.fail != nil {
						return 0, c.fail
					}
					return model(tools)
				}
				got := make([]int, callers)
				errs := make([]error, callers)
				var wg sync.WaitGroup
				for i := range callers {
					wg.Go(func() { got[i], errs[i] = m.tokens(page) })
				}
				synctest.Wait() // each caller measures or waits on a measure
				if n := measures.Load(); n != 1 {
					t.Errorf("%d measures under way for %d callers listing one page, want 1", n, callers)
				}
				close(release)
				wg.Wait()
				for i := range callers {
					if c.fail == nil && (got[i] != want || errs[i] != nil) || c.fail != nil && !errors.Is(errs[i], c.fail) {
						t.Errorf("caller %d: %d, %v; want %d, %v", i, got[i], errs[i], want, c.fail)
					}
				}
				m.tokens(page)
				if n := measures.Load(); n != c.wantAfter {
					t.Errorf("%d measures after one more listing, want %d", n, c.wantAfter)
				}
			})
		})
	}
}
