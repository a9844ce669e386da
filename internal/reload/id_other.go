//go:build !linux && !darwin

package reload

import "io/fs"

// IDOf tells nothing here: modification time and size alone say a file
// changed.
func IDOf(fs.FileInfo) FileID { return FileID{} }
