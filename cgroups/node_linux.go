package cgroups

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// Filesystem returns the capacity, available bytes and inodes of the
// filesystem holding path (statfs): kubelet's nodefs.* and imagefs.*
// inputs. statfs can hang on a dead network filesystem: the call gives up
// when ctx ends (the system call itself finishes in the background).
func Filesystem(ctx context.Context, path string) (FSStats, error) {
	type result struct {
		st  unix.Statfs_t
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var res result
		for {
			res.err = unix.Statfs(path, &res.st)
			if res.err != unix.EINTR {
				break
			}
		}
		ch <- res
	}()
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return FSStats{}, fmt.Errorf("statfs %s: %w", path, ctx.Err())
	}
	if res.err != nil {
		return FSStats{}, fmt.Errorf("statfs %s: %w", path, res.err)
	}
	st := &res.st
	bsize := uint64(st.Frsize)
	if bsize == 0 {
		bsize = uint64(st.Bsize)
	}
	fs := FSStats{
		Path:           path,
		CapacityBytes:  mul(st.Blocks, bsize),
		AvailableBytes: mul(st.Bavail, bsize),
		FreeBytes:      mul(st.Bfree, bsize),
	}
	if st.Files > 0 {
		fs.Inodes, fs.InodesFree = known(st.Files), known(st.Ffree)
	}
	return fs, nil
}
