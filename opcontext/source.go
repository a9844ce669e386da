// Package opcontext serves an operator's operating context through the
// gateway: a sidecar TOML file whose summary is appended to every profile's
// instructions (the soft layer), whose project-id registry and [defaults]
// are enforced on tool calls (the hard layer), and whose doctrine sections
// are served by a read-only get_operating_context tool.
//
// The file is the only write path. An absent file leaves the feature
// dormant; an invalid one turns it off with a warning and a finding; the
// kill switch turns it off whatever the file says. Every use stats the file
// and reloads it when its modification time, size or inode (reload.IDOf)
// changed, so an edit reaches the next call and the next new session's
// instructions without a restart, on stdio and HTTP alike. A Source whose
// CheckEvery is set looks at most that often on the per-call path (Check):
// an edit then reaches the calls from CheckEvery after it on.
package opcontext

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolprof/toolprof/internal/reload"
)

// Environment variables the operator owns.
const (
	// EnvPath overrides the sidecar path.
	EnvPath = "TOOLPROF_OPERATING_CONTEXT_PATH"
	// EnvSwitch set to "off" turns the feature off whatever the file says.
	EnvSwitch = "TOOLPROF_OPERATING_CONTEXT"
)

// SizeLimit is the summary length, in characters, above which the size
// finding fires: the summary is a fixed cost on every session.
const SizeLimit = 3000

// DefaultCheckEvery is the server's CheckEvery: an edit reaches the calls
// a tenth of a second after it, a human's edit-then-call never sooner, and
// a busy server stats the file ten times a second instead of per call.
const DefaultCheckEvery = 100 * time.Millisecond

// DefaultPath is the sidecar path under a home directory.
func DefaultPath(home string) string {
	return filepath.Join(home, ".toolprof", "operating-context.toml")
}

// State is what the feature is doing right now.
type State string

// The states. Only StateActive changes any behaviour.
const (
	StateDormant State = "dormant" // no file
	StateOff     State = "off"     // kill switch
	StateInvalid State = "invalid" // file present but unreadable or invalid; feature off
	StateActive  State = "active"
)

// Finding is one health finding about the sidecar.
type Finding struct {
	Check    string `json:"check"`    // "parse" or "size"
	Severity string `json:"severity"` // "warn" or "info"
	Message  string `json:"message"`
}

// Status describes the sidecar for health output and profiler doctor.
type Status struct {
	State            State
	Path             string
	SwitchValue      string // the kill switch's value when it turned the feature off
	Revision         string
	DoctrineSections int
	SummaryChars     int
}

// Source is the operating context read from the sidecar. It is safe for
// concurrent use; every method stats the file first and reloads on change.
type Source struct {
	// CheckEvery is the least time between two looks at the file by Check,
	// which runs on every tools/call: a Check within CheckEvery of the last
	// look takes the snapshot that look left, which bounds what a call pays
	// for the stat. Zero looks on every Check. Every other method (a new
	// session's instructions, the tool, health) always looks. Set it
	// before the first use.
	CheckEvery time.Duration

	path        string
	switchValue string // non-empty: off by kill switch
	logger      *slog.Logger
	now         func() time.Time // the monotonic clock CheckEvery is measured on; nil: time.Now

	mu     sync.Mutex
	snap   snapshot
	looked time.Time // when the file was last stat'ed, by now
}

// snapshot is one load of the file, keyed by what the stat saw.
type snapshot struct {
	loaded   bool
	exists   bool
	modTime  time.Time
	size     int64
	id       reload.FileID // a replacement keeping time and size has another
	loadedAt time.Time
	content  []byte // kept to detect a same-size edit within the mtime granularity
	file     *File  // nil unless the file parsed
	findings []Finding
}

// New reads the operator's settings from env (a lookup such as
// os.LookupEnv) and home, the directory holding .toolprof. A nil logger
// discards. New never fails: every problem is a state and a finding.
func New(env func(string) (string, bool), home string, logger *slog.Logger) *Source {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{logger: logger}
	if v, ok := env(EnvPath); ok && strings.TrimSpace(v) != "" {
		s.path = v
	} else if home != "" {
		s.path = DefaultPath(home)
	}
	if v, ok := env(EnvSwitch); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "", "on", "1", "true", "yes":
		case "off", "0", "false", "no":
			s.switchValue = v
		default:
			// A kill switch set to something unrecognised was most likely
			// meant to switch off: stay off, which changes nothing.
			s.switchValue = v
			logger.Warn("operating context: unrecognised kill switch value, feature off",
				"env", EnvSwitch, "value", v, "valid", "off or on")
		}
	}
	return s
}

// Path is the sidecar path in use ("" when there is no home and no override).
func (s *Source) Path() string { return s.path }

// current stats the file and returns the snapshot, reloading on change;
// bounded, it does not stat within CheckEvery of the last look.
func (s *Source) current(bounded bool) snapshot {
	if s.switchValue != "" || s.path == "" {
		return snapshot{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.CheckEvery > 0 {
		now := time.Now
		if s.now != nil {
			now = s.now
		}
		t := now()
		if bounded && s.snap.loaded && t.Sub(s.looked) < s.CheckEvery {
			return s.snap
		}
		s.looked = t
	}
	info, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.snap = snapshot{loaded: true}
		return s.snap
	}
	if err == nil && s.snap.loaded && s.snap.exists &&
		info.ModTime().Equal(s.snap.modTime) && info.Size() == s.snap.size && reload.IDOf(info) == s.snap.id &&
		!s.racy() {
		return s.snap
	}
	next := snapshot{loaded: true, exists: true, loadedAt: time.Now()}
	var data []byte
	if err == nil {
		next.modTime, next.size, next.id = info.ModTime(), info.Size(), reload.IDOf(info)
		if info.IsDir() {
			err = fmt.Errorf("%s is a directory, not a file", s.path)
		} else {
			data, err = os.ReadFile(s.path)
		}
	}
	if err == nil && s.snap.file != nil && bytes.Equal(data, s.snap.content) {
		// Same bytes (a racy re-read or a touch): keep the parse.
		next.content, next.file, next.findings = s.snap.content, s.snap.file, s.snap.findings
		s.snap = next
		return s.snap
	}
	var f *File
	if err == nil {
		f, err = Parse(s.path, data)
	}
	next.content = data
	if err != nil {
		next.findings = []Finding{{Check: "parse", Severity: "warn",
			Message: fmt.Sprintf("operating context is off: %v", err)}}
		// Log once per distinct content, not once per call.
		if !(s.snap.file == nil && len(s.snap.findings) > 0 && bytes.Equal(data, s.snap.content)) {
			s.logger.Warn("operating context file is invalid; feature off until it is fixed",
				"path", s.path, "err", err)
		}
		s.snap = next
		return s.snap
	}
	next.file = f
	if n := utf8.RuneCountInString(f.Instructions.Summary); n > SizeLimit {
		next.findings = []Finding{{Check: "size", Severity: "info",
			Message: fmt.Sprintf("%s: [instructions] summary is %d characters, over %d; every session pays for it (keep it near 1,500)",
				s.path, n, SizeLimit)}}
	}
	s.snap = next
	return s.snap
}

// racy reports whether the loaded content could be older than the file
// without the stat showing it: an edit that keeps the size within the
// filesystem's timestamp granularity. Such a snapshot is re-read (and
// compared byte for byte) until its mtime is safely in the past.
func (s *Source) racy() bool {
	return s.snap.loadedAt.Sub(s.snap.modTime) < 2*time.Second
}

// active returns the parsed file, or nil when the feature changes nothing.
func (s *Source) active() *File {
	return s.current(false).file
}

// Active reports whether the feature is on: a valid file, no kill switch.
func (s *Source) Active() bool { return s.active() != nil }

// Findings returns the health findings about the sidecar, none when it is
// absent, switched off or fine.
func (s *Source) Findings() []Finding {
	return append([]Finding(nil), s.current(false).findings...)
}

// Status describes the sidecar now.
func (s *Source) Status() Status {
	st := Status{Path: s.path}
	if s.switchValue != "" {
		st.State, st.SwitchValue = StateOff, s.switchValue
		return st
	}
	snap := s.current(false)
	switch {
	case !snap.exists:
		st.State = StateDormant
	case snap.file == nil:
		st.State = StateInvalid
	default:
		st.State = StateActive
		st.Revision = snap.file.ContextRevision
		st.DoctrineSections = len(snap.file.Doctrine)
		st.SummaryChars = utf8.RuneCountInString(snap.file.Instructions.Summary)
	}
	return st
}

// Instructions composes the instructions a new session is served: the
// profile's instructions, a blank line, then the context summary. Either may
// be empty (then there is no blank line). Without an active context the
// profile's text is returned untouched. It reads the file as it is now, so
// every new session sees the latest edit.
func (s *Source) Instructions(profileInstructions string) string {
	f := s.active()
	if f == nil {
		return profileInstructions
	}
	summary := strings.TrimRight(f.Instructions.Summary, " \t\r\n")
	profile := strings.TrimRight(profileInstructions, " \t\r\n")
	switch {
	case summary == "":
		return profileInstructions
	case profile == "":
		return summary
	}
	return profile + "\n\n" + summary
}
