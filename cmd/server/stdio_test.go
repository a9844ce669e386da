package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
)

func TestStdioProcs(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", 1},  // one client's calls: one P
		{"4", 0}, // the user's number stands
		{"1", 0},
	} {
		getenv := func(k string) string {
			if k == "GOMAXPROCS" {
				return tc.env
			}
			return ""
		}
		if got := stdioProcs(getenv); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: stdioProcs = %d, want %d", tc.env, got, tc.want)
		}
	}
}

func TestOwnStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name  string
		stdin any
		want  bool
	}{
		{"os.Stdin", os.Stdin, true},
		{"another file", r, false},
		{"not a file", &os.File{}, false},
	} {
		if got := ownStdin(tc.stdin); got != tc.want {
			t.Errorf("ownStdin(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// stdioChildEnv makes the test binary a server serving its own stdin
// (TestStdioOneProcessor), which then reports its GOMAXPROCS.
const stdioChildEnv = "TOOLPROF_TEST_STDIO_CHILD"

// TestStdioOneProcessor runs run serving the process's own stdin in a
// child (the setting is the process's) and reads the GOMAXPROCS it left:
// one, unless the environment names a number.
func TestStdioOneProcessor(t *testing.T) {
	if os.Getenv(stdioChildEnv) != "" {
		args := []string{"--telemetry", filepath.Join(t.TempDir(), "telemetry"), "--profiles", profilesFile, "--", bins.everything}
		err := run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr) // stdin is empty: it ends at once
		fmt.Fprintf(os.Stderr, "GOMAXPROCS=%d NumCPU=%d err=%v\n", runtime.GOMAXPROCS(0), runtime.NumCPU(), err)
		return
	}
	re := regexp.MustCompile(`GOMAXPROCS=(\d+) NumCPU=(\d+) err=<nil>`)
	for _, tc := range []struct {
		env  []string
		want int
	}{
		{nil, 1},
		{[]string{"GOMAXPROCS=3"}, 3},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStdioOneProcessor$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), stdioChildEnv+"=1"), tc.env...)
		out, err := cmd.CombinedOutput()
		m := re.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("child %v: %v\n%s", tc.env, err, out)
		}
		procs, _ := strconv.Atoi(string(m[1]))
		numCPU, _ := strconv.Atoi(string(m[2]))
		if tc.env == nil && numCPU == 1 {
			t.Log("one CPU: the default is one P already")
			continue
		}
		if procs != tc.want {
			t.Errorf("GOMAXPROCS with %v: %d, want %d", tc.env, procs, tc.want)
		}
	}
}
