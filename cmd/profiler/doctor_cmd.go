package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/toolprof/toolprof/opcontext"
)

// runDoctor reports the health of the operator's side files: for now the
// operating-context sidecar, with the same findings the server reports. It
// exits 1 when a finding of severity warn exists.
func runDoctor(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("doctor", "[--operating-context PATH]",
		"Checks the operating-context sidecar and prints the findings the server would report.\n"+
			"Exits 1 when any finding is a warning.", stderr)
	path := fs.String("operating-context", "", "operating-context sidecar `PATH` to check (default: $"+
		opcontext.EnvPath+", else ~/.toolprof/operating-context.toml)")
	if help, err := parseCommandFlags("doctor", fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("doctor: unexpected argument %q", fs.Arg(0))
	}
	env := os.LookupEnv
	if *path != "" {
		env = func(k string) (string, bool) {
			if k == opcontext.EnvPath {
				return *path, true
			}
			return os.LookupEnv(k)
		}
	}
	home, _ := os.UserHomeDir() // no home: dormant unless a path is given

	src := opcontext.New(env, home, nil)
	st := src.Status()
	fmt.Fprintf(stdout, "operating context: %s\n", orNone(st.Path))
	findings := src.Findings()
	switch st.State {
	case opcontext.StateDormant:
		fmt.Fprintln(stdout, "status: dormant (no file; nothing served, nothing enforced)")
	case opcontext.StateOff:
		fmt.Fprintf(stdout, "status: off by kill switch (%s=%s)\n", opcontext.EnvSwitch, st.SwitchValue)
		// Still check the file, so it can be fixed before switching on.
		unswitched := opcontext.New(func(k string) (string, bool) {
			if k == opcontext.EnvSwitch {
				return "", false
			}
			return env(k)
		}, home, nil)
		if s := unswitched.Status(); s.State != opcontext.StateDormant {
			fmt.Fprintf(stdout, "file (were the switch on): %s\n", s.Describe())
		}
		findings = unswitched.Findings()
	default:
		fmt.Fprintf(stdout, "status: %s\n", st.Describe())
	}
	warned := 0
	if len(findings) == 0 {
		fmt.Fprintln(stdout, "findings: none")
	}
	for _, f := range findings {
		fmt.Fprintf(stdout, "%-4s %-5s %s\n", f.Severity, f.Check, f.Message)
		if f.Severity == "warn" {
			warned++
		}
	}
	if warned > 0 {
		return exitError{Code: 1, Err: fmt.Errorf("doctor: %d warning finding(s)", warned)}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none: no home directory and no " + opcontext.EnvPath + ")"
	}
	return s
}
