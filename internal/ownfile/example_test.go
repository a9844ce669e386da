package ownfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolprof/toolprof/internal/ownfile"
)

// A command that writes a JSON summary with --out refuses to replace a file
// it did not write, naming the flag and the recogniser's reason.
func ExampleCheck() {
	type summary struct {
		Sessions int `json:"sessions"`
		Calls    int `json:"calls"`
	}
	dir, err := os.MkdirTemp("", "ownfile")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "summary.json")
	check := func() error {
		return ownfile.Check(out, ownfile.JSONLike(summary{}), ownfile.Wording{
			Unreadable: func(err error) error { return fmt.Errorf("summarize: --out: %w", err) },
			Foreign: func(why error) error {
				return fmt.Errorf("summarize: --out %s exists and is no summary (%v): remove it or name another file", filepath.Base(out), why)
			},
		})
	}

	fmt.Println("nothing there:", check())
	os.WriteFile(out, []byte(`{"sessions": 4, "calls": 19}`), 0o644)
	fmt.Println("an earlier summary:", check())
	os.WriteFile(out, []byte(`{"sessions": 4, "calls": 19, "owner": "me"}`), 0o644)
	fmt.Println(check())
	// Output:
	// nothing there: <nil>
	// an earlier summary: <nil>
	// summarize: --out summary.json exists and is no summary (unknown key "owner"): remove it or name another file
}
