package toolsource

import (
	"flag"

	"github.com/toolprof/toolprof/internal/cli"
)

// Register declares the source flags into fs: --launch and --persona, and
// --catalog withCatalog. The command is what follows the flags (Parse).
func (s *Spec) Register(fs *flag.FlagSet, withCatalog bool) {
	if withCatalog {
		fs.StringVar(&s.Catalog, "catalog", "", "recorded tools/list catalog `FILE` to price, served by the gateway's code")
	}
	fs.StringVar(&s.Launch, "launch", "", "launch document `FILE` (.mcp.json) whose servers are started and asked for their tools")
	fs.StringVar(&s.Persona, "persona", "", "persona `NAME` merged into the launch document (with --launch)")
}

// Parse parses args into fs (where Register declared the source flags),
// takes what follows the flags as the command and checks that exactly one
// source was given; errors are cli usage errors. help is true when -h was
// asked for.
func (s *Spec) Parse(cmd string, fs *flag.FlagSet, args []string, withCatalog bool) (help bool, err error) {
	if help, err := cli.Parse(cmd, fs, args); help || err != nil {
		return help, err
	}
	s.Command = fs.Args()
	return false, s.Check(cmd, withCatalog)
}

// Check validates that exactly one source was given, naming command cmd.
func (s *Spec) Check(cmd string, withCatalog bool) error {
	n := 0
	for _, set := range []bool{s.Catalog != "", s.Launch != "", len(s.Command) > 0} {
		if set {
			n++
		}
	}
	want := "--launch FILE or -- CMD ARGS"
	if withCatalog {
		want = "--catalog FILE, --launch FILE or -- CMD ARGS"
	}
	switch {
	case n == 0:
		return cli.Usagef("%s: no tool source: give %s", cmd, want)
	case n > 1:
		return cli.Usagef("%s: more than one tool source: give only one of %s", cmd, want)
	case s.Persona != "" && s.Launch == "":
		return cli.Usagef("%s: --persona needs --launch", cmd)
	}
	return nil
}
