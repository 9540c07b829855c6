package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// Without $GOGC, kernelet's default applies; with it, the operator's value
// stays.
func TestSetDefaultGOGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	t.Setenv("GOGC", "")
	// An empty $GOGC is still "set": Go's runtime reads it as 100.
	if got, tuner := setDefaultGOGC(); got != 100 || tuner != nil {
		t.Errorf("with GOGC set (empty) the value in effect must stay, untuned: got %d, tuner %v", got, tuner)
	}
	debug.SetGCPercent(200)
	t.Setenv("GOGC", "200")
	if got, tuner := setDefaultGOGC(); got != 200 || tuner != nil {
		t.Errorf("GOGC=200: got %d, tuner %v", got, tuner)
	}
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GOGC=200: the runtime's percentage became %d", got)
	}
}

func TestSetDefaultGOGCUnset(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	t.Setenv("GOGC", "x") // registers the restore of the original value
	unsetenv(t, "GOGC")
	got, tuner := setDefaultGOGC()
	if got != DefaultGOGC {
		t.Errorf("without GOGC: got %d, want %d", got, DefaultGOGC)
	}
	if tuner == nil || tuner.Idle != DefaultGOGC || tuner.Busy != 100 {
		t.Errorf("without GOGC the pod churn tunes the collector from %d to Go's 100: tuner %+v", DefaultGOGC, tuner)
	}
	if got := debug.SetGCPercent(100); got != DefaultGOGC {
		t.Errorf("the runtime's percentage is %d, want %d", got, DefaultGOGC)
	}
}

func unsetenv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}
