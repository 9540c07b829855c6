//go:build unix

package volume

import (
	"os"
	"syscall"
)

// fileGID is the group owning the file of info.
func fileGID(info os.FileInfo) (int64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Gid), true
}
