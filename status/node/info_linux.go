package node

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// filesystemSize is the size in bytes of the filesystem holding path.
func filesystemSize(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("ephemeral storage capacity: statfs %s: %w", path, err)
	}
	frag := st.Frsize
	if frag <= 0 {
		frag = st.Bsize
	}
	return int64(st.Blocks) * frag, nil
}
