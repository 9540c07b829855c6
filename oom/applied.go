package oom

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Who changed a requested oom_score_adj (Applied.RefusedBy).
const (
	// RefusedByRuntime: the runtime wrote another value into the
	// container's spec (containerd's restrict_oom_score_adj raises values
	// below its own oom_score_adj to that value).
	RefusedByRuntime = "runtime"
	// RefusedByKernel: the spec has the requested value but the process
	// runs with a higher one (a value lowered without CAP_SYS_RESOURCE is
	// refused).
	RefusedByKernel = "kernel"
	// RefusedByProcess: the spec has the requested value and the process
	// runs with a value no refusal explains (it changed its own).
	RefusedByProcess = "process"
	// RefusedByUnknown: the runtime does not say what its spec has.
	RefusedByUnknown = "unknown"
)

// Applied is how a requested oom_score_adj ended up on a container's
// process.
type Applied struct {
	// Requested is what the policy (ScoreAdj) asked for.
	Requested int `json:"requested"`
	// Runtime is the value in the runtime's own container spec; meaningful
	// when RuntimeKnown.
	Runtime      int  `json:"runtime"`
	RuntimeKnown bool `json:"-"`
	// Effective is the process's /proc/<pid>/oom_score_adj.
	Effective int `json:"effective"`
}

// Refused tells whether the process runs with another value than the one
// requested.
func (a Applied) Refused() bool { return a.Effective != a.Requested }

// RefusedBy names who changed the value: RefusedByRuntime when the
// runtime's spec already differs from the request; with the request in the
// spec, RefusedByKernel when the process runs higher (a lowering refused),
// RefusedByProcess otherwise; RefusedByUnknown when the spec is not known;
// "" when nothing was refused.
func (a Applied) RefusedBy() string {
	switch {
	case !a.Refused():
		return ""
	case !a.RuntimeKnown:
		return RefusedByUnknown
	case a.Runtime != a.Requested:
		return RefusedByRuntime
	case a.Effective > a.Requested:
		return RefusedByKernel
	default:
		return RefusedByProcess
	}
}

// String renders a for logs and status: "-997" when applied as asked,
// "requested -997, effective 0 (changed by the runtime)" otherwise.
func (a Applied) String() string {
	switch by := a.RefusedBy(); by {
	case "":
		return strconv.Itoa(a.Effective)
	case RefusedByUnknown:
		return fmt.Sprintf("requested %d, effective %d (the runtime's spec is not known)", a.Requested, a.Effective)
	default:
		return fmt.Sprintf("requested %d, effective %d (changed by the %s)", a.Requested, a.Effective, by)
	}
}

// ErrNoProcess is returned by ReadScoreAdj when the process is gone.
var ErrNoProcess = errors.New("no such process")

// ReadScoreAdj reads /proc/<pid>/oom_score_adj under procRoot ("" means
// /proc).
func ReadScoreAdj(procRoot string, pid int) (int, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	if pid <= 0 {
		return 0, fmt.Errorf("oom_score_adj of pid %d: %w", pid, ErrNoProcess)
	}
	p := filepath.Join(procRoot, strconv.Itoa(pid), "oom_score_adj")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", p, ErrNoProcess)
	}
	if err != nil {
		return 0, fmt.Errorf("read oom_score_adj: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return v, nil
}
