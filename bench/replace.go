package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/internal/ownfile"
)

// resultsTitle is the first line of every results document WriteResults
// writes.
const resultsTitle = "# Token cost of the initialize + tools/list exchange, per profile\n"

// CheckReplace reports whether profiler bench --out may write path:
// nothing is there, or a report bench wrote in any of its formats is (a
// JSON report DecodeReport reads, a results document, or a table or
// markdown table headed by bench's columns). Anything else, such as a
// hand-written note or the profiles file named by a slip, would be lost.
func CheckReplace(path string) error {
	return ownfile.Check(path, ownReport, ownfile.Wording{
		Unreadable: func(err error) error { return fmt.Errorf("bench: --out %s: %w", path, err) },
		Foreign: func(error) error {
			return fmt.Errorf("bench: --out %s exists and is no report profiler bench wrote (JSON, a results document, or a table headed %q), which writing would replace: remove it or name another file",
				path, strings.Join(leadColumns, " | "))
		},
	})
}

// leadColumns are the first header cells of every table and markdown
// report (cells).
var leadColumns = []string{"profile", "tools", "model anthropic", "model openai"}

// ownReport says why b is no report bench writes; nil when it is one.
func ownReport(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return ownJSONReport(b)
	}
	if bytes.HasPrefix(b, []byte(resultsTitle)) {
		return nil
	}
	// A table's header is its first or second line (under a border); a
	// markdown table's the first.
	lines := strings.SplitN(string(b), "\n", 4)
	for _, l := range lines[:min(len(lines), 3)] {
		var cells []string
		for _, c := range strings.FieldsFunc(l, func(r rune) bool { return r == '|' || r == '│' }) {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		if len(cells) >= len(leadColumns) && slices.Equal(cells[:len(leadColumns)], leadColumns) {
			return nil
		}
	}
	return errors.New("no JSON object, results title or table header")
}

// ownJSONReport says why b is no JSON report bench wrote: an object with
// every key a Report encodes (sessions may be absent) and no other, which
// DecodeReport reads. DecodeReport alone takes any object with a
// "profiles" array of named entries, which other tools' files hold. Only
// the first JSON value counts, as for DecodeReport: a report with a line
// added by hand is still bench's.
func ownJSONReport(b []byte) error {
	var first json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&first); err != nil {
		return err
	}
	if err := ownfile.JSONLike(Report{}, "sessions")(first); err != nil {
		return err
	}
	_, err := DecodeReport(bytes.NewReader(b))
	return err
}
