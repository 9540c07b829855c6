//go:build !unix

package volume

import "os"

// fileGID is unknown here: OnRootMismatch always walks.
func fileGID(os.FileInfo) (int64, bool) { return 0, false }
