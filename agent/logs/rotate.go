package logs

import (
	"slices"
	"strings"
	"time"
)

// Rotated-file naming, as kubelet names them: <log>.<timestamp>, and
// <log>.<timestamp>.gz once compressed; .tmp marks a compression in
// progress. A second rotation within the same second (a fast writer)
// appends the nanoseconds (<log>.<timestamp>.<nanoseconds>), a name that
// sorts after the first one of that second, so that rotation is not held
// back to once a second as kubelet's names would.
const (
	RotationTimeFormat  = "20060102-150405"
	SubSecondTimeFormat = RotationTimeFormat + ".000000000"
	CompressedSuffix    = ".gz"
	TempSuffix          = ".tmp"
)

// Policy is the rotation policy of the KubeletConfiguration.
type Policy struct {
	// MaxSize is containerLogMaxSize in bytes: a log larger is rotated.
	MaxSize int64
	// MaxFiles is containerLogMaxFiles: the current log plus the rotated
	// ones kept (at least 2).
	MaxFiles int
}

// Plan is what to do with one container's logs, in order: remove, then
// compress, then rotate the current log into RotateTo.
type Plan struct {
	// Remove are leftovers of an interrupted compression, uncompressed
	// files whose compressed copy exists, and the oldest rotated files
	// beyond the policy.
	Remove []string
	// Compress are rotated files to gzip (all but the newest rotated).
	Compress []string
	// RotateTo is the name the current log is renamed to before the
	// runtime reopens it ("" : no rotation).
	RotateTo string
}

// PlanRotation decides, for the current log at path of size bytes and the
// files named path.* beside it (others), what to do at time now. Rotated
// files sort by their timestamp (the name).
func PlanRotation(path string, size int64, others []string, p Policy, now time.Time) Plan {
	var plan Plan
	var rotated []string
	all := map[string]bool{}
	for _, f := range others {
		all[f] = true
	}
	for _, f := range others {
		switch {
		case !strings.HasPrefix(f, path+"."):
		case strings.HasSuffix(f, TempSuffix):
			plan.Remove = append(plan.Remove, f)
		case !strings.HasSuffix(f, CompressedSuffix) && all[f+CompressedSuffix]:
			plan.Remove = append(plan.Remove, f) // compressed already
		default:
			rotated = append(rotated, f)
		}
	}
	slices.SortFunc(rotated, func(a, b string) int {
		return strings.Compare(strings.TrimSuffix(a, CompressedSuffix), strings.TrimSuffix(b, CompressedSuffix))
	})
	var to string
	if p.MaxSize > 0 && size > p.MaxSize {
		to = rotatedName(path, all, now)
	}
	rotate := to != ""
	// Rotated files to keep: MaxFiles-1 beside the current log, one fewer
	// when a rotation is about to add one.
	keep := max(p.MaxFiles-1, 1)
	if rotate {
		keep = max(p.MaxFiles-2, 0)
	}
	if n := len(rotated) - keep; n > 0 {
		plan.Remove = append(plan.Remove, rotated[:n]...)
		rotated = rotated[n:]
	}
	for i, f := range rotated {
		// The newest rotated file stays uncompressed unless a rotation
		// makes a newer one.
		if strings.HasSuffix(f, CompressedSuffix) || (i == len(rotated)-1 && !rotate) {
			continue
		}
		plan.Compress = append(plan.Compress, f)
	}
	plan.RotateTo = to
	return plan
}

// rotatedName is the name the log at path rotates to at now: kubelet's
// name when free, else the sub-second one when free, else "" (no
// rotation this time).
func rotatedName(path string, taken map[string]bool, now time.Time) string {
	for _, layout := range []string{RotationTimeFormat, SubSecondTimeFormat} {
		to := path + "." + now.UTC().Format(layout)
		if !taken[to] && !taken[to+CompressedSuffix] {
			return to
		}
	}
	return ""
}
