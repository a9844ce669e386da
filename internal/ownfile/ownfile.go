// Package ownfile keeps a command from overwriting a file it did not
// write. An output flag names a path; the command may write there when
// nothing is there, or when what is there is a file the command itself
// wrote before (an earlier run's output, perhaps edited), and must refuse
// anything else: a hand-written note, another tool's file, or the command's
// own input named by a slip would be lost.
//
// The mental model is one question asked of the bytes already at the path:
// "is this ours?". A [Recogniser] answers it, nil meaning yes and an error
// saying why not. [Check] asks it: a missing file needs no answer, an
// unreadable one is an error, and a file the recogniser rejects is a
// refusal. Each caller words both errors itself ([Wording]), so that a
// refusal names its own flag and says what the command writes; Check adds
// no words of its own.
//
// Recognisers should be strict about the shape the command writes and
// lenient about content a person may change: an earlier report whose
// numbers were edited is still the command's to replace. [JSONLike]
// recognises the JSON object a Go value encodes to by its keys.
//
// Check reads the whole file; outputs are small. It decides only whether
// to write: the write itself belongs to the caller (atomically, see
// internal/atomicfile), so a file that appears between the check and the
// write is replaced.
package ownfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
)

// Recogniser says why b, the contents of a file at an output path, is not
// a file the command wrote; nil when it is.
type Recogniser func(b []byte) error

// Wording is how one output flag words the errors Check returns. Both
// fields are required.
type Wording struct {
	// Unreadable is the error for a file that is there but cannot be
	// read (a directory, no permission); err is the read error, which
	// names the path.
	Unreadable func(err error) error
	// Foreign is the refusal of a file the command did not write; why is
	// the Recogniser's reason.
	Foreign func(why error) error
}

// Check reports whether the command may write path: nil when nothing is
// there or ours recognises what is, w.Foreign(why) when ours does not, and
// w.Unreadable(err) when the file cannot be read.
func Check(path string, ours Recogniser, w Wording) error {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return w.Unreadable(err)
	}
	if why := ours(b); why != nil {
		return w.Foreign(why)
	}
	return nil
}

// JSONLike recognises a JSON object with exactly the keys zero encodes to
// (json.Marshal), every one of them present, plus any of extra, which may
// be present or absent (fields that omitempty leaves out of zero). Values
// are not looked at. b must hold the one object and nothing after it; a
// caller that allows more (text appended by hand) passes the first value.
// zero must encode to a JSON object; when it does not, every file is
// refused with that error.
//
// The reasons it gives are "not a JSON object: …", "no "k" key" and
// "unknown key "k"", naming the first such key in sorted order.
func JSONLike(zero any, extra ...string) Recogniser {
	var want map[string]json.RawMessage
	enc, err := json.Marshal(zero)
	if err == nil {
		err = json.Unmarshal(enc, &want)
	}
	return func(b []byte) error {
		if err != nil {
			return err
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if _, ok := got[k]; !ok {
				return fmt.Errorf("no %q key", k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[k]; !ok && !slices.Contains(extra, k) {
				return fmt.Errorf("unknown key %q", k)
			}
		}
		return nil
	}
}
