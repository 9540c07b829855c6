package userns

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// NodeUser is the user whose subordinate IDs are the node's (kubelet's).
const NodeUser = "kubelet"

// Open builds the node's user namespace ranges over podsDir as kubelet
// does: idsPerPod (0: DefaultIDsPerPod) from the node's IDs (NodeIDs),
// enough for maxPods; the allocations kept by an earlier run are read
// back (and logged).
func Open(ctx context.Context, podsDir string, idsPerPod uint32, maxPods int) (*Manager, error) {
	per := idsPerPod
	if per == 0 {
		per = DefaultIDsPerPod
	}
	first, length, err := NodeIDs(ctx, per)
	if err != nil {
		return nil, err
	}
	m, err := New(Config{PodsDir: podsDir, IDsPerPod: idsPerPod, FirstID: first, Length: length, MaxPods: maxPods})
	if err != nil {
		return nil, err
	}
	if n := m.InUse(); n > 0 {
		klog.FromContext(ctx).Info("User namespace ranges kept from before", "pods", n, "idsPerPod", m.IDsPerPod())
	}
	return m, nil
}

// NodeIDs are the host IDs the node may hand out, as kubelet finds them:
// the subordinate UIDs of the user NodeUser that getsubids reports (they
// must equal its subordinate GIDs); kubelet's default (DefaultNodeIDs)
// when that user or getsubids does not exist.
func NodeIDs(ctx context.Context, idsPerPod uint32) (first, length uint32, err error) {
	if _, err := user.Lookup(NodeUser); err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			first, length = DefaultNodeIDs(idsPerPod)
			return first, length, nil
		}
		return 0, 0, fmt.Errorf("user namespaces: look up user %q: %w", NodeUser, err)
	}
	bin, err := exec.LookPath("getsubids")
	if err != nil {
		first, length = DefaultNodeIDs(idsPerPod)
		return first, length, nil
	}
	uids, err := exec.CommandContext(ctx, bin, NodeUser).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("user namespaces: subordinate uids of %q: %w", NodeUser, err)
	}
	gids, err := exec.CommandContext(ctx, bin, "-g", NodeUser).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("user namespaces: subordinate gids of %q: %w", NodeUser, err)
	}
	if string(uids) != string(gids) {
		return 0, 0, fmt.Errorf("user namespaces: mismatched subordinate uids and gids of %q", NodeUser)
	}
	return ParseSubIDs(string(uids))
}

// ParseSubIDs parses getsubids' output, one line "0: <user> <first> <count>".
func ParseSubIDs(out string) (first, length uint32, err error) {
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	if len(lines) != 1 {
		return 0, 0, fmt.Errorf("getsubids output %q: want one line", out)
	}
	f := strings.Fields(lines[0])
	if len(f) != 4 {
		return 0, 0, fmt.Errorf("getsubids output %q: want 4 fields", out)
	}
	a, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("getsubids output %q: %w", out, err)
	}
	b, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("getsubids output %q: %w", out, err)
	}
	return uint32(a), uint32(b), nil
}
