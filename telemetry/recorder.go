package telemetry

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RecorderOptions configure a Recorder. Zero values take the defaults.
type RecorderOptions struct {
	Replica       string        // replica id in session ids and file names; default: the host name
	Rotate        time.Duration // segment rotation interval, aligned to UTC; default 24h
	BatchSize     int           // events per commit; default 16384
	FlushInterval time.Duration // longest an event waits for its commit; default 100ms
	QueueSize     int           // queued events before drops; default 65536
	Logger        *slog.Logger  // default: slog.Default()
	// RetryInterval is how often a degraded recorder tries to open a fresh
	// segment; default 10s.
	RetryInterval time.Duration

	// maxSegmentBytes makes bbolt refuse to grow a segment past it: the
	// tests' stand-in for a full disk (no mount needed).
	maxSegmentBytes int
}

// Defaults for RecorderOptions.
const (
	DefaultRotate        = 24 * time.Hour
	DefaultBatchSize     = 16384 // fewer, larger commits: each costs two fsyncs
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultQueueSize     = 1 << 16
	DefaultRetryInterval = 10 * time.Second
)

var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// RecorderHealth is a snapshot of a recorder's counters.
type RecorderHealth struct {
	Enqueued uint64 // accepted into the queue
	Written  uint64 // committed to a segment
	Dropped  uint64 // refused because the queue was full (or after Close)
	Lost     uint64 // dequeued but not stored because storage failed
	Degraded error  // the current storage failure; nil when fine
	Segment  string // path of the open segment, "" when none
}

// Recorder appends telemetry to rotating segments in a directory. Its
// methods that record (Session, Call, Switch) only enqueue: they never block
// and never fail; one writer goroutine commits batches.
type Recorder struct {
	dir  string
	opts RecorderOptions
	log  *slog.Logger

	queue    chan event
	closing  atomic.Bool
	inflight atomic.Int64
	enqueued atomic.Uint64
	written  atomic.Uint64
	dropped  atomic.Uint64
	lost     atomic.Uint64

	idPrefix string
	idNext   atomic.Uint64

	mu       sync.Mutex // guards degraded and segPath for Health
	degraded error
	segPath  string

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Owned by the writer goroutine.
	seg         *segmentWriter
	rotateAt    time.Time
	dropsBefore uint64 // drops and losses already stored in closed segments
	dropsStored uint64 // the value last written to the open segment
	nextRetry   time.Time
	segFailed   bool // a commit to the open segment failed: replace it at nextRetry
}

// OpenRecorder starts a recorder writing into dir. It fails only on invalid
// options: a storage problem (unwritable directory, locked file, full disk)
// yields a working recorder whose Health reports the degradation, so the
// server keeps serving without telemetry.
func OpenRecorder(dir string, opts RecorderOptions) (*Recorder, error) {
	if opts.Replica == "" {
		host, _ := os.Hostname()
		opts.Replica = strings.Trim(regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(host, "-"), "-")
		if opts.Replica == "" {
			opts.Replica = "replica"
		}
	}
	if !replicaPattern.MatchString(opts.Replica) {
		return nil, fmt.Errorf("telemetry replica %q: use letters, digits, '-' and '_' only", opts.Replica)
	}
	for name, d := range map[string]time.Duration{"rotate": opts.Rotate, "flush interval": opts.FlushInterval, "retry interval": opts.RetryInterval} {
		if d < 0 {
			return nil, fmt.Errorf("telemetry %s %s: must be positive (0 takes the default)", name, d)
		}
	}
	if opts.BatchSize < 0 || opts.QueueSize < 0 {
		return nil, fmt.Errorf("telemetry batch size %d / queue size %d: must be positive (0 takes the default)", opts.BatchSize, opts.QueueSize)
	}
	opts.Rotate = orDefault(opts.Rotate, DefaultRotate)
	opts.FlushInterval = orDefault(opts.FlushInterval, DefaultFlushInterval)
	opts.RetryInterval = orDefault(opts.RetryInterval, DefaultRetryInterval)
	opts.BatchSize = orDefault(opts.BatchSize, DefaultBatchSize)
	opts.QueueSize = orDefault(opts.QueueSize, DefaultQueueSize)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var nonce [3]byte
	_, _ = rand.Read(nonce[:])
	r := &Recorder{
		dir:      dir,
		opts:     opts,
		log:      opts.Logger.With("component", "telemetry", "dir", dir),
		queue:    make(chan event, opts.QueueSize),
		idPrefix: opts.Replica + "/" + strconv.FormatInt(time.Now().UnixNano(), 36) + hex.EncodeToString(nonce[:]) + "-",
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.setDegraded(fmt.Errorf("create telemetry directory: %w", err))
	}
	r.openSegment(time.Now())
	go r.run()
	return r, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// NewSessionID returns "<replica>/<unique>": the replica id, then a part
// unique to this recorder (its start time and a random nonce) and a counter.
func (r *Recorder) NewSessionID() string {
	return r.idPrefix + strconv.FormatUint(r.idNext.Add(1), 36)
}

// Session enqueues a session record: it creates or replaces the record with
// the same ID. Call it when the session starts and again when it ends.
func (r *Recorder) Session(s Session) {
	if s.Start.IsZero() {
		s.Start = time.Now()
	}
	s.Switches = append([]Switch(nil), s.Switches...)
	r.enqueue(event{kind: eventSession, session: &s})
}

// Call enqueues a call record. It never blocks: when the queue is full the
// call is dropped and counted.
func (r *Recorder) Call(c Call) {
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	r.enqueue(event{kind: eventCall, call: c})
}

// Switch enqueues a tool-group switch of a session.
func (r *Recorder) Switch(session string, sw Switch) {
	if sw.Time.IsZero() {
		sw.Time = time.Now()
	}
	r.enqueue(event{kind: eventSwitch, sw: sw, swOf: session})
}

func (r *Recorder) enqueue(e event) {
	// inflight lets Close wait for senders that passed the closing check, so
	// no event lands in the queue after the final drain.
	r.inflight.Add(1)
	if r.closing.Load() {
		r.inflight.Add(-1)
		r.dropped.Add(1)
		return
	}
	select {
	case r.queue <- e:
		r.enqueued.Add(1)
	default:
		r.dropped.Add(1)
	}
	r.inflight.Add(-1)
}

// Health reports the counters and the current storage failure.
func (r *Recorder) Health() RecorderHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RecorderHealth{
		Enqueued: r.enqueued.Load(),
		Written:  r.written.Load(),
		Dropped:  r.dropped.Load(),
		Lost:     r.lost.Load(),
		Degraded: r.degraded,
		Segment:  r.segPath,
	}
}

// Close stops accepting events, commits everything queued, and closes the
// open segment (marking it closed so readers take it). It returns the error
// of that final flush, if any.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		r.closing.Store(true)
		for r.inflight.Load() != 0 {
			runtime.Gosched()
		}
		close(r.stop)
		<-r.done
	})
	return r.closeErr
}

func (r *Recorder) run() {
	defer close(r.done)
	// In the writer goroutine: waiting on other processes' locks must not
	// delay the server's start; events queue meanwhile.
	if r.seg != nil {
		r.finishStale()
	}
	tick := time.NewTicker(r.opts.FlushInterval)
	defer tick.Stop()
	batch := make([]event, 0, r.opts.BatchSize)
	for {
		select {
		case e := <-r.queue:
			batch = append(batch, e)
			if len(batch) >= r.opts.BatchSize {
				r.commit(batch)
				clear(batch)
				batch = batch[:0]
			}
		case now := <-tick.C:
			r.commit(batch)
			clear(batch)
			batch = batch[:0]
			r.maintain(now)
		case <-r.stop:
			for {
				select {
				case e := <-r.queue:
					batch = append(batch, e)
					if len(batch) < r.opts.BatchSize {
						continue
					}
				default:
				}
				err := r.commit(batch)
				if len(batch) < r.opts.BatchSize {
					r.closeErr = errors.Join(err, r.closeSegment(time.Now()))
					return
				}
				clear(batch)
				batch = batch[:0]
			}
		}
	}
}

func (r *Recorder) drops() uint64 { return r.dropped.Load() + r.lost.Load() }

// commit writes a batch (and the drop count, when it changed). Without a
// segment the batch is lost and counted.
func (r *Recorder) commit(batch []event) error {
	drops := r.drops() - r.dropsBefore
	if len(batch) == 0 && (r.seg == nil || drops == r.dropsStored) {
		return nil
	}
	if r.seg == nil {
		r.lost.Add(uint64(len(batch)))
		return r.currentDegraded()
	}
	if err := r.seg.commit(batch, drops, drops != r.dropsStored); err != nil {
		r.lost.Add(uint64(len(batch)))
		r.setDegraded(err)
		if !r.segFailed {
			r.segFailed = true
			r.nextRetry = time.Now().Add(r.opts.RetryInterval)
		}
		return err
	}
	r.dropsStored = drops
	r.written.Add(uint64(len(batch)))
	if !r.segFailed {
		// A segment that failed once stays suspect (a nearly full disk
		// takes small commits and refuses big ones) until it is replaced.
		r.setDegraded(nil)
	}
	return nil
}

// maintain rotates the segment when its interval ended and retries a failed
// segment open.
func (r *Recorder) maintain(now time.Time) {
	switch {
	case r.seg != nil && !now.Before(r.rotateAt):
		r.closeSegment(now)
		r.openSegment(now)
	case r.seg != nil && r.segFailed && !now.Before(r.nextRetry):
		// Commits to this segment failed (a full disk, say): a fresh segment
		// may work where the old file cannot grow.
		r.closeSegment(now)
		r.openSegment(now)
	case r.seg == nil && !now.Before(r.nextRetry):
		r.openSegment(now)
	}
}

func (r *Recorder) openSegment(now time.Time) {
	path := segmentPath(r.dir, r.opts.Replica, now, true)
	// Made under a name no listing matches and renamed once locked and
	// initialised: a file under an open segment's name whose lock is free
	// is one a stopped recorder left, and another process sweeping for
	// those (finishStale) would otherwise close it between its creation
	// and its lock. bbolt keeps using the file it opened.
	creating := path + creatingSuffix
	db, err := createSegmentMax(creating, r.opts.Replica, now, r.opts.maxSegmentBytes)
	if err != nil {
		// bbolt may have made the file before failing (a full disk, the
		// size limit); no listing finds it, and each retry makes another.
		os.Remove(creating)
	} else if err = os.Rename(creating, path); err != nil {
		db.Close()
		os.Remove(creating)
		err = fmt.Errorf("open telemetry segment: %w", err)
	}
	var w *segmentWriter
	if err == nil {
		if w, err = newSegmentWriter(db, path); err != nil {
			db.Close()
		}
	}
	if err != nil {
		r.nextRetry = now.Add(r.opts.RetryInterval)
		r.setDegraded(err)
		return
	}
	r.seg = w
	r.segFailed = false
	r.rotateAt = now.UTC().Truncate(r.opts.Rotate).Add(r.opts.Rotate)
	r.dropsStored = 0
	r.mu.Lock()
	r.segPath = path
	r.mu.Unlock()
	if r.drops() > r.dropsBefore {
		// Store drops and losses from while no segment was open.
		r.commit(nil)
	} else {
		r.setDegraded(nil)
	}
}

// closeSegment marks the open segment closed and renames it so readers take
// it. Drops counted so far are stored in it.
func (r *Recorder) closeSegment(now time.Time) error {
	if r.seg == nil {
		return r.currentDegraded()
	}
	drops := r.drops() - r.dropsBefore
	err := r.seg.close(now, drops, closedPath(r.seg.path))
	if err == nil {
		r.dropsBefore += drops
	}
	r.seg = nil
	r.mu.Lock()
	r.segPath = ""
	r.mu.Unlock()
	if err != nil {
		r.setDegraded(err)
	}
	return err
}

// finishStale closes segments left open by recorders that died (a crash):
// this replica's, and other replicas' that nobody has touched for staleAge.
// A segment whose lock is held belongs to a live process and is left alone.
// It removes the .creating files recorders died creating (sweepCreating).
func (r *Recorder) finishStale() {
	segs, err := ListSegments([]string{r.dir})
	if err != nil {
		r.log.Warn("list telemetry segments", "err", err)
		return
	}
	removed, err := sweepCreating(r.dir, time.Now().Add(-staleAge))
	for _, path := range removed {
		r.log.Info("removed a segment file a stopped recorder left while creating it", "file", path)
	}
	if err != nil {
		r.log.Warn("cannot remove a segment file a stopped recorder left while creating it", "err", err)
	}
	own := r.Health().Segment
	for _, s := range segs {
		if !s.Open || s.Path == own {
			continue
		}
		mine := s.Replica == r.opts.Replica
		if !mine && !staleFile(s.Path) {
			continue
		}
		err := closeStale(s)
		switch {
		case err == nil:
			r.log.Info("closed a segment left open by a stopped recorder", "segment", s.Path)
		case errors.Is(err, ErrSegmentLocked) && mine:
			r.log.Warn("another live process writes this replica's segment; replica ids must be unique per process", "segment", s.Path)
		case errors.Is(err, ErrSegmentLocked), errors.Is(err, errClosedMeanwhile):
		default:
			r.log.Warn("cannot close a segment left open by a stopped recorder", "err", err)
		}
	}
}

func (r *Recorder) currentDegraded() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.degraded
}

// setDegraded records the storage state, logging each change once rather
// than each failed batch.
func (r *Recorder) setDegraded(err error) {
	r.mu.Lock()
	was := r.degraded
	r.degraded = err
	r.mu.Unlock()
	switch {
	case err != nil && was == nil:
		r.log.Error("telemetry degraded: events are counted as lost, tool calls continue", "err", err)
	case err == nil && was != nil:
		r.log.Info("telemetry recovered", "segment", r.segPath)
	}
}
