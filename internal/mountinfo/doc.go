// Package mountinfo is kernelet's one reader of /proc/<pid>/mountinfo:
// Parse splits each line into the fields its readers use (root, mount
// point, options, filesystem type, source, super options), with the
// kernel's octal escapes of paths undone and malformed lines reported by
// number; IsMountPoint tells whether a path is a mount point (the CSI volume
// manager, the tests' CSI driver). The readers (cgroup discovery, the tracefs lookup of the bpf
// loaders, the test environment, the e2e and VM tests and the leak
// check) keep only their own filtering. It must not grow dependencies: production packages and the
// test environment both import it.
package mountinfo
