package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	shutdownMu sync.Mutex
	shutdowns  []func() error
)

// OnShutdown registers fn to run when Main returns (last registered runs
// first). Components shared by the tests of one binary register their Stop
// here, so they are torn down even when a test fails or panics in cleanup.
func OnShutdown(fn func() error) {
	shutdownMu.Lock()
	defer shutdownMu.Unlock()
	shutdowns = append(shutdowns, fn)
}

// Shutdown runs every registered shutdown function once, newest first, and
// joins their errors.
func Shutdown() error {
	shutdownMu.Lock()
	fns := shutdowns
	shutdowns = nil
	shutdownMu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		if err := fns[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Main runs the tests of a package that uses shared components and tears
// those components down afterwards, holding the run's owner lock meanwhile
// (owner_linux.go). Use it as:
//
//	func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
func Main(m *testing.M) int {
	// The run's owner lock: while this binary lives, `testenv reap` leaves
	// the run's components alone; killed, it frees them for the next reap.
	release, err := HoldRun()
	if err != nil {
		fmt.Fprintf(os.Stderr, "test environment: %v (a killed run will not be reaped)\n", err)
		release = func() {}
	}
	code := m.Run()
	defer release()
	if err := Shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "test environment teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StopTimeout bounds the stop of a shared instance when Main returns.
const StopTimeout = time.Minute

// ErrMissing marks a start error that is a missing prerequisite (see
// Missing): Shared.Get hands it to Require instead of failing.
var ErrMissing = errors.New("prerequisite missing")

// Missing returns an error wrapping ErrMissing that says what is missing.
func Missing(what string) error { return fmt.Errorf("%w: %s", ErrMissing, what) }

// Shared is the one instance of a component (a containerd, an apiserver)
// that the tests of one test binary share. Declare it as a package
// variable and hand Get the start function; the package's TestMain must use
// Main, which stops the instance.
type Shared[T any] struct {
	mu      sync.Mutex
	started bool
	v       T
	err     error
}

// Get returns the instance, starting it with start on the first call. start
// returns the instance and its stop function, which Shutdown runs (bounded
// by StopTimeout) when Main returns. A start error that wraps ErrMissing
// skips this and every later caller (fails them under CI=true, see
// Require); any other start error fails this and every later caller. name
// says what the instance is, for those messages.
func (s *Shared[T]) Get(t testing.TB, name string, start func() (T, func(context.Context) error, error)) T {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		v, stop, err := start()
		s.v, s.err = v, err
		if err == nil && stop != nil {
			OnShutdown(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
				defer cancel()
				return stop(ctx)
			})
		}
	}
	if errors.Is(s.err, ErrMissing) {
		Require(t, false, strings.TrimPrefix(s.err.Error(), ErrMissing.Error()+": "))
	}
	if s.err != nil {
		t.Fatalf("shared %s: %v", name, s.err)
	}
	return s.v
}
