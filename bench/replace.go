package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
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
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("bench: --out %s: %w", path, err)
	case !isReport(b):
		return fmt.Errorf("bench: --out %s exists and is no report profiler bench wrote (JSON, a results document, or a table headed %q), which writing would replace: remove it or name another file",
			path, strings.Join(leadColumns, " | "))
	}
	return nil
}

// leadColumns are the first header cells of every table and markdown
// report (cells).
var leadColumns = []string{"profile", "tools", "model anthropic", "model openai"}

// isReport reports whether b is a report bench writes.
func isReport(b []byte) bool {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return isJSONReport(b)
	}
	if bytes.HasPrefix(b, []byte(resultsTitle)) {
		return true
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
			return true
		}
	}
	return false
}

// isJSONReport reports whether b is a JSON report bench wrote: an object
// with every key a Report encodes (sessions may be absent) and no other,
// which DecodeReport reads. DecodeReport alone takes any object with a
// "profiles" array of named entries, which other tools' files hold.
func isJSONReport(b []byte) bool {
	var got map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&got); err != nil {
		return false
	}
	zero, err := json.Marshal(Report{})
	var want map[string]json.RawMessage
	if err != nil || json.Unmarshal(zero, &want) != nil {
		return false
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			return false
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != "sessions" {
			return false
		}
	}
	_, err = DecodeReport(bytes.NewReader(b))
	return err == nil
}
