//go:build !linux && !darwin

package reload

import "io/fs"

// idOf tells nothing here: modification time and size alone say a file
// changed.
func idOf(fs.FileInfo) fileID { return fileID{} }
