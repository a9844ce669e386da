package reload

import (
	"io/fs"
	"syscall"
)

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctimespec.Nano()}
}
