package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func parseGroupsFlags(args ...string) (*deriveGroupsFlags, error) {
	fl := flag.NewFlagSet("derive", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	g := addDeriveGroupsFlags(fl)
	if err := fl.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fl.Visit(func(x *flag.Flag) { set[x.Name] = true })
	return g, g.check(set)
}

func TestDeriveGroupsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for valid
	}{
		{nil, ""},
		{[]string{"--groups"}, ""},
		{[]string{"--groups", "--groups-profile", "switchable", "--groups-max-switches", "2"}, ""},
		{[]string{"--groups-profile", "x"}, "--groups-profile needs --groups"},
		{[]string{"--groups-report", "r.json"}, "--groups-report needs --groups"},
		{[]string{"--groups", "--groups-max-switches", "0"}, "--groups-max-switches 0: want a mean number of switches > 0"},
		{[]string{"--groups", "--groups-max-switches", "NaN"}, "--groups-max-switches NaN"},
		{[]string{"--groups", "--groups-profile", "full"}, "--groups-profile full: full holds every tool"},
		{[]string{"--groups", "--groups-profile", "bad name"}, `--groups-profile "bad name"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseGroupsFlags(tc.args...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if code := exitCode(err, io.Discard); code != 2 {
				t.Errorf("exit %d, want 2 (usage)", code)
			}
		})
	}
}
