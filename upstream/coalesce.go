package upstream

import "sync"

// coalescer runs f on a goroutine of its own each time it is kicked,
// merging kicks: while f runs, any number of kicks ask for one more run,
// and no more than one goroutine exists at a time. An upstream that sends
// list_changed notifications in a flood thus costs one refresh in flight
// and one pending, not a goroutine per notification. The goroutine exits
// when no run is pending; stop refuses later kicks and waits for it.
type coalescer struct {
	f func()

	mu      sync.Mutex
	running bool // the goroutine exists
	dirty   bool // a kick came while it ran: run once more
	stopped bool
	idle    sync.WaitGroup // the goroutine, while running
}

func newCoalescer(f func()) *coalescer { return &coalescer{f: f} }

// kick asks for a run of f; nil and stopped coalescers ignore it.
func (q *coalescer) kick() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.stopped:
	case q.running:
		q.dirty = true
	default:
		q.running = true
		q.idle.Add(1)
		go q.run()
	}
}

func (q *coalescer) run() {
	defer q.idle.Done()
	for {
		q.f()
		q.mu.Lock()
		if !q.dirty || q.stopped {
			q.running, q.dirty = false, false
			q.mu.Unlock()
			return
		}
		q.dirty = false
		q.mu.Unlock()
	}
}

// stop refuses later kicks and waits for a run in progress to end.
func (q *coalescer) stop() {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.idle.Wait()
}
