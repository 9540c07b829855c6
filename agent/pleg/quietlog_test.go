package pleg

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// An Error through the quiet logger comes out as Info at the level asked for,
// and not at all below it; WithName/WithValues keep it quiet.
func TestQuietErrors(t *testing.T) {
	var lines []string
	newLogger := func(v int) logr.Logger {
		return funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: v})
	}
	quietErrors(newLogger(4), 4).WithName("cri").WithValues("k", "v").Error(errors.New("unimplemented"), "failed to receive")
	if len(lines) != 1 {
		t.Fatalf("want one line at V(4), got %q", lines)
	}
	if got := lines[0]; !strings.Contains(got, `"level"=4`) || !strings.Contains(got, `"err"="unimplemented"`) || strings.Contains(got, `"error"`) {
		t.Errorf("line %q is not an info line at level 4 with err", got)
	}
	lines = nil
	quietErrors(newLogger(2), 4).Error(errors.New("unimplemented"), "failed to receive")
	if len(lines) != 0 {
		t.Errorf("at -v=2 the quiet error must not be written, got %q", lines)
	}
}

// The quiet line names the caller's file, not the wrapper's.
func TestQuietErrorsCaller(t *testing.T) {
	var lines []string
	l := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 4, LogCaller: funcr.All})
	quietErrors(l, 4).WithValues("k", "v").Error(errors.New("unimplemented"), "failed to receive")
	quietErrors(l, 4).Info("plain")
	if len(lines) != 2 {
		t.Fatalf("got %q", lines)
	}
	for _, line := range lines {
		if !strings.Contains(line, `"file"="quietlog_test.go"`) {
			t.Errorf("line %q does not name the caller's file", line)
		}
	}
}
