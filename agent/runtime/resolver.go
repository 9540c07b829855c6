package runtime

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/oom"
)

// CgroupResolver implements oom.Resolver with the CRI runtime: it maps a
// container's cgroup (the runtime spec's linux.cgroupsPath from
// ContainerStatus verbose info, or a path whose leaf directory is the
// container id) to its pod and container by their CRI labels; a sandbox's
// cgroup and a pod-level cgroup ("pod<uid>") resolve to the pod alone. It
// caches what it learned and asks the runtime again on a miss (at most
// every MinRefresh).
type CgroupResolver struct {
	rs internalapi.RuntimeService
	// MinRefresh bounds how often a miss lists the runtime again.
	MinRefresh time.Duration

	mu      sync.Mutex
	last    time.Time
	byPath  map[string]oom.PodRef // cgroupsPath → container
	byID    map[string]oom.PodRef // container or sandbox id
	byUID   map[string]oom.PodRef // pod uid → pod
	spec    map[string]bool       // container ids whose cgroupsPath was asked for
	nowFunc func() time.Time
}

// NewCgroupResolver returns a resolver over rs.
func NewCgroupResolver(rs internalapi.RuntimeService) *CgroupResolver {
	return &CgroupResolver{rs: rs, MinRefresh: 200 * time.Millisecond, byPath: map[string]oom.PodRef{},
		byID: map[string]oom.PodRef{}, byUID: map[string]oom.PodRef{}, spec: map[string]bool{}, nowFunc: time.Now}
}

var _ oom.Resolver = (*CgroupResolver)(nil)

// Resolve returns the pod (and container) of cgroupPath.
func (r *CgroupResolver) Resolve(ctx context.Context, cgroupPath string) (oom.PodRef, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := r.lookup(cgroupPath)
	if ok && (ref.Container != "" || !r.unknownLeaf(cgroupPath)) {
		return ref, true
	}
	// Unknown, or a known pod whose leaf directory may be a container
	// created since the last refresh (a re-created container).
	if now := r.nowFunc(); now.Sub(r.last) >= r.MinRefresh {
		r.last = now
		if err := r.refresh(ctx); err != nil {
			klog.FromContext(ctx).V(2).Info("cgroup resolver refresh", "err", err)
		}
		return r.lookup(cgroupPath)
	}
	return ref, ok
}

// unknownLeaf reports whether the leaf directory of cg is neither a pod
// cgroup nor a container or sandbox id the cache knows.
func (r *CgroupResolver) unknownLeaf(cg string) bool {
	if pc, ok := cgroups.ParsePodCgroup(cg); ok && pc.Below == "" {
		return false
	}
	_, known := r.byID[cgroups.ContainerIDOfDir(path.Base(path.Clean("/"+cg)))]
	return !known
}

// lookup answers from the cache: the exact path, else the leaf directory
// as a container or sandbox id (also "cri-containerd-<id>.scope"), else
// the pod cgroup of either driver's layout (cgroups.ParsePodCgroup).
func (r *CgroupResolver) lookup(cg string) (oom.PodRef, bool) {
	cg = path.Clean("/" + cg)
	if ref, ok := r.byPath[cg]; ok {
		return ref, true
	}
	if ref, ok := r.byID[cgroups.ContainerIDOfDir(path.Base(cg))]; ok {
		return ref, true
	}
	if pc, ok := cgroups.ParsePodCgroup(cg); ok {
		if ref, ok := r.byUID[pc.PodUID]; ok {
			return ref, true
		}
	}
	return oom.PodRef{}, false
}

// refresh lists sandboxes and containers; containers not seen before are
// asked for their cgroupsPath.
func (r *CgroupResolver) refresh(ctx context.Context) error {
	sbs, err := r.rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		info, err := podconfig.ParseSandboxLabels(sb.GetLabels())
		if err != nil {
			continue
		}
		ref := oom.PodRef{Namespace: info.PodNamespace, Name: info.PodName, UID: info.PodUID}
		r.byID[sb.GetId()] = ref
		r.byUID[info.PodUID] = ref
	}
	ctrs, err := r.rs.ListContainers(ctx, nil)
	if err != nil {
		return err
	}
	for _, c := range ctrs {
		// Unreadable annotations do not matter here: only the identity.
		info, _ := podconfig.ParseContainer(c.GetLabels(), c.GetAnnotations())
		if info.PodUID == "" || info.ContainerName == "" {
			continue
		}
		ref := oom.PodRef{Namespace: info.PodNamespace, Name: info.PodName, UID: info.PodUID, Container: info.ContainerName}
		r.byID[c.GetId()] = ref
		if r.spec[c.GetId()] {
			continue
		}
		r.spec[c.GetId()] = true
		resp, err := r.rs.ContainerStatus(ctx, c.GetId(), true)
		if err != nil {
			continue
		}
		if p := cgroupsPathOfInfo(resp.GetInfo()); p != "" {
			r.byPath[p] = ref
		}
	}
	return nil
}

// cgroupsPathOfInfo reads runtimeSpec.linux.cgroupsPath from a verbose
// ContainerStatus "info" entry (containerd's format); "" when absent or
// not a cgroupfs path.
func cgroupsPathOfInfo(info map[string]string) string {
	raw, ok := info["info"]
	if !ok {
		return ""
	}
	var v struct {
		RuntimeSpec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil {
		return ""
	}
	p := v.RuntimeSpec.Linux.CgroupsPath
	if !strings.HasPrefix(p, "/") {
		return "" // systemd "slice:prefix:name": resolved by the leaf id
	}
	return path.Clean(p)
}
