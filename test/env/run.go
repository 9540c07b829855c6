package env

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
)

// Prefix starts the name of everything a test run creates: cgroup dirs,
// netns, links, temp dirs. The leak check looks for it.
const Prefix = "kltest"

// RunIDEnv names the environment variable that carries the run id across
// the processes of one `make test` (test binaries, hack tools, leak check).
const RunIDEnv = "KERNELET_TEST_RUN"

var (
	runOnce sync.Once
	runID   string
)

// RunID returns the id of this test run, "kltest" followed by six hex
// digits. It comes from $KERNELET_TEST_RUN when set (make test sets it once
// for the whole run) and is generated per process otherwise. It is at most
// 12 bytes, so "<RunID>" plus a short suffix still fits a 15-byte link name.
func RunID() string {
	runOnce.Do(func() {
		if v := os.Getenv(RunIDEnv); v != "" {
			runID = v
			return
		}
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		runID = Prefix + hex.EncodeToString(b[:])
	})
	return runID
}

// StateBase is the directory under which each component keeps its state
// (pid files, sockets, configs), one sub-directory per component and run:
// /run/kltest/<run id>/<component>. `down` finds everything there.
func StateBase() string {
	if v := os.Getenv("KERNELET_TEST_STATE"); v != "" {
		return v
	}
	return filepath.Join("/run", Prefix)
}

// StateDir returns StateBase()/<RunID()>/<component>.
func StateDir(component string) string {
	return filepath.Join(StateBase(), RunID(), component)
}

// CacheDir is where expensive builds (kube-apiserver, etcd, the VM kernel's
// initramfs pieces) are cached across runs, outside the repository, keyed
// by version below it. $KERNELET_CACHE overrides it.
func CacheDir() string {
	if v := os.Getenv("KERNELET_CACHE"); v != "" {
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kernelet")
	}
	return filepath.Join(os.TempDir(), "kernelet-cache")
}
