package env

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// OwnerLockPrefix starts the name of the lock files that the live processes
// of a run hold in its state dir (StateBase()/<run>/owner-<pid>.lock): a test
// binary from Main, `make demo` from its script. A run whose owner locks are
// all free was killed without its teardown; `testenv reap` removes it.
const OwnerLockPrefix = "owner-"

// HoldRun takes this process's owner lock of the run and returns its release
// (which unlocks and removes the file).
func HoldRun() (release func(), err error) {
	dir := filepath.Join(StateBase(), RunID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hold run: %w", err)
	}
	name := filepath.Join(dir, OwnerLockPrefix+strconv.Itoa(os.Getpid())+".lock")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hold run: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("hold run: lock %s: %w", name, err)
	}
	return func() {
		_ = os.Remove(name)
		f.Close()
		// The run dir goes when this was its last content.
		_ = os.Remove(dir)
	}, nil
}

// RunOwners tells whether a run's state dir has owner locks and whether any
// of them is still held by a live process.
func RunOwners(runDir string) (locks []string, live bool, err error) {
	locks, err = filepath.Glob(filepath.Join(runDir, OwnerLockPrefix+"*.lock"))
	if err != nil {
		return nil, false, err
	}
	for _, l := range locks {
		f, err := os.OpenFile(l, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return locks, true, err
		}
		ferr := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		f.Close() // closing drops a lock taken here
		if errors.Is(ferr, unix.EWOULDBLOCK) {
			return locks, true, nil
		}
	}
	return locks, false, nil
}
