package cgroups

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/kernelet/kernelet/internal/mountinfo"
)

// Mode is how the host's cgroup filesystems are laid out.
type Mode int

// The cgroup modes.
const (
	// Unavailable: no cgroup filesystem is mounted.
	Unavailable Mode = iota
	// Legacy: only cgroup v1 hierarchies.
	Legacy
	// Hybrid: v1 hierarchies for controllers, plus a cgroup2 mount (often
	// /sys/fs/cgroup/unified) that has few or no controllers.
	Hybrid
	// Unified: cgroup v2 only.
	Unified
)

func (m Mode) String() string {
	switch m {
	case Legacy:
		return "legacy"
	case Hybrid:
		return "hybrid"
	case Unified:
		return "unified"
	default:
		return "unavailable"
	}
}

// Mount is one mounted cgroup hierarchy.
type Mount struct {
	// Path is the mount point, e.g. /sys/fs/cgroup/memory.
	Path string
	// Root is the cgroup of the hierarchy that is mounted there ("/" unless
	// the mount is a bind of a sub-tree, as inside a container).
	Root string
	// Version is 1 or 2.
	Version int
	// Controllers are the v1 controllers of the hierarchy as named in its
	// super options ("memory", "cpu", "cpuacct", "name=systemd", ...); for
	// v2 they are read by the caller from cgroup.controllers when needed.
	Controllers []string
}

// Hierarchies is every cgroup mount of the host, classified.
type Hierarchies struct {
	Mode Mode
	// Unified is the cgroup2 mount, or nil (Legacy).
	Unified *Mount
	// V1 are the v1 hierarchies by controller; a hierarchy that carries
	// several controllers (cpu,cpuacct) appears under each. Named
	// hierarchies appear as "name=<name>".
	V1 map[string]*Mount
}

// ErrNoCgroups is returned by Discover when no cgroup filesystem is mounted.
var ErrNoCgroups = errors.New("no cgroup filesystem mounted")

// Discover reads /proc/self/mountinfo and classifies the cgroup mounts.
func Discover() (*Hierarchies, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup mounts: %w", err)
	}
	defer f.Close()
	mounts, err := ParseMountinfo(f)
	if err != nil {
		return nil, fmt.Errorf("cgroup mounts: /proc/self/mountinfo: %w", err)
	}
	h := Classify(mounts)
	if h.Mode == Unavailable {
		return h, ErrNoCgroups
	}
	return h, nil
}

// ParseMountinfo returns the cgroup and cgroup2 mounts listed in a
// mountinfo file (proc(5), read by mountinfo.Parse).
func ParseMountinfo(r io.Reader) ([]Mount, error) {
	es, err := mountinfo.Parse(r, func(e *mountinfo.Entry) bool { return e.FSType == "cgroup" || e.FSType == "cgroup2" })
	if err != nil {
		return nil, err
	}
	out := make([]Mount, 0, len(es))
	for _, e := range es {
		m := Mount{Root: e.Root, Path: e.Point, Version: 1}
		if e.FSType == "cgroup2" {
			m.Version = 2
		} else {
			for _, o := range strings.Split(e.SuperOptions, ",") {
				if isV1Controller(o) {
					m.Controllers = append(m.Controllers, o)
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// isV1Controller tells controller names and name= options from the other
// super options of a v1 mount (rw, relatime, xattr, release_agent=...).
func isV1Controller(o string) bool {
	switch {
	case strings.HasPrefix(o, "name="):
		return true
	case o == "rw" || o == "ro" || o == "relatime" || o == "noatime" || o == "xattr" || o == "noprefix" ||
		o == "clone_children" || o == "cpuset_v2_mode" || o == "favordynmods" || strings.Contains(o, "="):
		return false
	}
	return o != ""
}

// Classify decides the mode from the cgroup mounts. When a hierarchy is
// mounted more than once (bind mounts), the first mount of the full
// hierarchy (Root "/") wins, else the first one.
func Classify(mounts []Mount) *Hierarchies {
	h := &Hierarchies{V1: map[string]*Mount{}}
	better := func(cur *Mount, cand *Mount) bool { return cur == nil || (cur.Root != "/" && cand.Root == "/") }
	for i := range mounts {
		m := &mounts[i]
		if m.Version == 2 {
			if better(h.Unified, m) {
				h.Unified = m
			}
			continue
		}
		for _, c := range m.Controllers {
			if better(h.V1[c], m) {
				h.V1[c] = m
			}
		}
	}
	switch {
	case h.Unified != nil && len(h.V1) == 0:
		h.Mode = Unified
	case h.Unified != nil:
		h.Mode = Hybrid
	case len(h.V1) > 0:
		h.Mode = Legacy
	}
	return h
}

// V1Mounts returns each distinct v1 hierarchy once, ordered by mount point.
func (h *Hierarchies) V1Mounts() []*Mount {
	var out []*Mount
	for _, m := range h.V1 {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *Mount) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Dir maps a cgroup (an absolute path in the hierarchy, e.g.
// /kubepods/burstable) to its directory under mount m. A cgroup outside
// the mounted sub-tree has no directory: ok is false.
func (m *Mount) Dir(cgroup string) (dir string, ok bool) {
	cg := path.Clean("/" + cgroup)
	root := path.Clean("/" + m.Root)
	if root != "/" {
		if cg != root && !strings.HasPrefix(cg, root+"/") {
			return "", false
		}
		cg = strings.TrimPrefix(cg, root)
	}
	return path.Join(m.Path, cg), true
}
