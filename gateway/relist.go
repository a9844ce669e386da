package gateway

// Listing again after a listing failed while its upstream was up. An
// upstream.Set serves such a server's tools as last listed and says why
// the listing failed (upstream.Health.ListError); after a reconnection
// health reports the server joining (the catalog lacks its current
// session's tools), after a tools/list_changed ready with tools that may
// be out of date. Nothing else lists it again until its next
// tools/list_changed, which a server whose tools did not change again
// never sends, so after every listing the gateway looks for such a server
// and, while there is one, lists again with backoff (capped at
// DefaultRelistMax, so a server whose listing keeps failing costs one
// listing in that time).
//
// One retrier runs at a time, started by the listing that fails while a
// server is up; it lists under the listing token like any other listing,
// and ends when no server's last listing failed while up (whoever listed)
// or when the Gateway closes.

import (
	"context"
	mathrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/toolprof/toolprof/upstream"
)

// Defaults of Options.RelistBackoff.
const (
	DefaultRelistInitial = time.Second
	DefaultRelistMax     = 30 * time.Second
)

// relister is the Gateway's retrier of failed listings.
type relister struct {
	ctx     context.Context // ended by Close: the retrier's wait and listing
	cancel  context.CancelFunc
	backoff upstream.Backoff
	wg      sync.WaitGroup // the retrier running; Close waits for it

	mu      sync.Mutex // orders starting a retrier with one ending, and with Close
	running bool
	retries int // listings the running retrier made: Health's list_retries
}

func newRelister(b upstream.Backoff) *relister {
	if b.Initial <= 0 {
		b.Initial = DefaultRelistInitial
	}
	if b.Max < b.Initial {
		b.Max = max(DefaultRelistMax, b.Initial)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &relister{ctx: ctx, cancel: cancel, backoff: b}
}

// stop ends the retrier and waits for it; none starts after.
func (r *relister) stop() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}

// listRetries is the number of listings retried since one failed, 0 when
// no retrier runs.
func (r *relister) listRetries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retries
}

// failedListings returns the upstreams whose last listing failed while
// they were up (a ListError, scrubbed by the Client): joining, their
// current session's tools not in the catalog, or ready, served the tools
// of an earlier listing of this session that a tools/list_changed said
// had changed.
func (g *Gateway) failedListings() []upstream.Health {
	u, ok := g.opts.Upstream.(interface{ Health() []upstream.Health })
	if _, lists := g.opts.Upstream.(connectionLister); !ok || !lists {
		return nil
	}
	ups := u.Health()
	markJoining(ups, g.cat().joined)
	var failed []upstream.Health
	for _, h := range ups {
		if (h.State == upstream.StateJoining || h.State == upstream.StateReady) && h.ListError != "" {
			failed = append(failed, h)
		}
	}
	return failed
}

// relistLater starts the retrier if an upstream's last listing failed
// while it was up and none runs. Every listing calls it when done.
func (g *Gateway) relistLater() {
	r := g.relist
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || r.ctx.Err() != nil || len(g.failedListings()) == 0 {
		return
	}
	r.running = true
	r.wg.Add(1)
	go g.retryListing()
}

// stillFailing returns the upstreams whose last listing failed; when
// there are none it marks the retrier ended, under the lock relistLater
// tests it with, so that a listing failing now starts another.
func (g *Gateway) stillFailing() []upstream.Health {
	r := g.relist
	r.mu.Lock()
	defer r.mu.Unlock()
	failed := g.failedListings()
	if len(failed) == 0 {
		r.running, r.retries = false, 0
	}
	return failed
}

// retryListing lists again, with backoff, until no upstream's last
// listing failed while it was up, or the Gateway closes.
func (g *Gateway) retryListing() {
	r := g.relist
	defer r.wg.Done()
	for attempt := 0; ; attempt++ {
		wait := time.NewTimer(jitter(r.backoff.Delay(attempt)))
		select {
		case <-r.ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		failed := g.stillFailing()
		if len(failed) == 0 {
			return // listed meanwhile, by a change or a reconnection
		}
		r.mu.Lock()
		r.retries++
		retry := r.retries
		r.mu.Unlock()
		names := make([]string, len(failed))
		for i, u := range failed {
			names[i] = u.Name
			g.logger.Warn("upstream's tools could not be listed while it is up; listing again", "server", u.Name, "error", u.ListError, "retry", retry)
		}
		// A failure shows in the upstreams' ListError, logged by the next
		// retry; Close ending the listing is no failure.
		_ = g.relistTools(r.ctx, strings.Join(names, ","))
		if len(g.stillFailing()) == 0 {
			return
		}
	}
}

// jitter is a random wait between half of d and d, so that gateways
// started together do not list a shared upstream in step.
func jitter(d time.Duration) time.Duration {
	return d/2 + mathrand.N(d/2+1)
}
