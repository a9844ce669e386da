package profiles

import "fmt"

// Reload loads the set of generatedPath again for a server now serving
// last (nil when it serves no profiles file). It is Load, except that a
// profiles.toml last was loaded with and that is now missing is an error,
// as a missing generated file is: serving the set without it would drop
// its deny lists, destructive patterns and read_only overrides at once,
// and a file is missing for a moment while an editor or git checkout
// replaces it. The caller keeps serving last; once the file is back, the
// next Reload takes it up. To stop applying a profiles.toml while serving,
// reduce it to "version = 1".
func Reload(generatedPath string, last *Set) (*Set, error) {
	s, err := Load(generatedPath)
	if err != nil {
		return nil, err
	}
	if s.Policy == nil && last != nil && last.Policy != nil {
		return nil, fmt.Errorf(`%s was removed: the rules it held stay in force until it is back; to serve without them, write "version = 1" into it, or restart the server`,
			PolicyPathFor(generatedPath))
	}
	return s, nil
}
