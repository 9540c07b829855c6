package oom

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestAppliedRefusedBy(t *testing.T) {
	for name, tc := range map[string]struct {
		a      Applied
		by     string
		render string
	}{
		"applied as asked":        {Applied{Requested: 1000, Runtime: 1000, RuntimeKnown: true, Effective: 1000}, "", "1000"},
		"runtime raised it":       {Applied{Requested: -997, Runtime: 0, RuntimeKnown: true, Effective: 0}, RefusedByRuntime, "requested -997, effective 0 (changed by the runtime)"},
		"kernel refused it":       {Applied{Requested: -997, Runtime: -997, RuntimeKnown: true, Effective: 0}, RefusedByKernel, "requested -997, effective 0 (changed by the kernel)"},
		"spec unknown":            {Applied{Requested: -997, Effective: 0}, RefusedByUnknown, "requested -997, effective 0 (the runtime's spec is not known)"},
		"process changed its own": {Applied{Requested: 916, Runtime: 916, RuntimeKnown: true, Effective: 500}, RefusedByProcess, "requested 916, effective 500 (changed by the process)"},
		"spec unknown, as asked":  {Applied{Requested: 916, Effective: 916}, "", "916"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.a.RefusedBy(); got != tc.by {
				t.Errorf("RefusedBy = %q, want %q", got, tc.by)
			}
			if got := tc.a.Refused(); got != (tc.by != "") {
				t.Errorf("Refused = %v", got)
			}
			if got := tc.a.String(); got != tc.render {
				t.Errorf("String = %q, want %q", got, tc.render)
			}
		})
	}
}

func TestReadScoreAdj(t *testing.T) {
	root := t.TempDir()
	for pid, content := range map[string]string{"10": "-997\n", "11": "1000", "12": "lots\n"} {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "oom_score_adj"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := ReadScoreAdj(root, 10); err != nil || v != -997 {
		t.Errorf("pid 10: %d, %v", v, err)
	}
	if v, err := ReadScoreAdj(root, 11); err != nil || v != 1000 {
		t.Errorf("pid 11: %d, %v", v, err)
	}
	if _, err := ReadScoreAdj(root, 12); err == nil {
		t.Error("pid 12: no error for a value that is not a number")
	}
	if _, err := ReadScoreAdj(root, 13); !errors.Is(err, ErrNoProcess) {
		t.Errorf("pid 13: %v, want ErrNoProcess", err)
	}
	if _, err := ReadScoreAdj(root, 0); !errors.Is(err, ErrNoProcess) {
		t.Errorf("pid 0: %v, want ErrNoProcess", err)
	}
	// This process, through the real /proc.
	want, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadScoreAdj("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != strconv.Itoa(got)+"\n" {
		t.Errorf("own oom_score_adj = %d, /proc says %q", got, want)
	}
}
