package reload

import (
	"io/fs"
	"syscall"
)

// IDOf is fi's FileID.
func IDOf(fi fs.FileInfo) FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}
	}
	return FileID{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: st.Ctim.Nano()}
}
