package launch

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
)

// hasPathSeparator reports whether command names a file rather than a
// program to look up on PATH.
func hasPathSeparator(command string) bool {
	return strings.ContainsRune(command, '/') || strings.ContainsRune(command, filepath.Separator)
}

// resolveCommand returns command as the process is started with it: a
// relative path taken from the server's working directory, cwd (absolute
// when the entry came from a file), else dir, the declaring file's
// directory, and made absolute so that it does not depend on the
// gateway's working directory; a bare name, looked up on PATH, as it is.
func resolveCommand(command, cwd, dir string) string {
	base := cmp.Or(cwd, dir)
	if !hasPathSeparator(command) || filepath.IsAbs(command) || base == "" {
		return command
	}
	if abs, err := filepath.Abs(filepath.Join(base, command)); err == nil {
		return abs
	}
	return command
}

// LookCommand checks that a stdio server's command can be started: a path
// must name an executable file, a bare name must be found on the
// gateway's PATH. The error names the entry (FILE:LINE), the server, the
// key and the command as written, and where it was looked for.
func (s ResolvedServer) LookCommand() error {
	if s.Transport != Stdio {
		return nil
	}
	_, err := exec.LookPath(s.Command)
	if err == nil {
		return nil
	}
	var why string
	switch {
	case !hasPathSeparator(s.Command):
		why = "not found on PATH; give the program's path (a relative one is taken from the server's cwd, else from the declaring file's directory) or install it"
	default:
		// Without exec's "exec: NAME:" and stat's "stat PATH:", which
		// repeat the path.
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		why = fmt.Sprintf("cannot run %s: %v", s.Command, err)
		switch {
		case filepath.IsAbs(s.Template.Command) || s.Template.dir == "":
		case s.Template.Cwd != "":
			why += " (a relative command is taken relative to the server's cwd)"
		default:
			why += " (a relative command without a cwd is taken from the directory of the file that declares it)"
		}
	}
	// An entry built without a template (the server's -- CMD shorthand)
	// was written as its command.
	return fmt.Errorf("%s: server %q: command %q: %s", cmp.Or(s.Template.Source, "launch document"), s.Name, cmp.Or(s.Template.Command, s.Command), why)
}
