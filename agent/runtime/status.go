package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/podutil"
)

// GetPodStatus reads the runtime's view of pod uid: its sandboxes and
// containers found by the pod UID label, each with its full status.
// Objects that vanish between the list and the status call are left out.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	sel := map[string]string{podconfig.LabelPodUID: string(uid)}
	sbs, err := m.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	ctrs, err := m.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	listed := &PodStatus{UID: uid, Name: name, Namespace: namespace}
	for _, sb := range sbs {
		listed.Sandboxes = append(listed.Sandboxes, &SandboxStatus{ID: sb.Id})
	}
	for _, c := range ctrs {
		listed.Containers = append(listed.Containers, &ContainerStatus{ID: c.Id, SandboxID: c.PodSandboxId})
	}
	return m.reread(ctx, listed)
}

// reread reads again the full status of every sandbox and container in
// st (by ID, no List calls): for a pod whose worker alone creates them,
// so nothing new can have appeared since st. Objects gone since are left
// out.
func (m *Manager) reread(ctx context.Context, st *PodStatus) (*PodStatus, error) {
	out := &PodStatus{UID: st.UID, Name: st.Name, Namespace: st.Namespace}
	var errs []error
	for _, sb := range st.Sandboxes {
		resp, err := m.rs.PodSandboxStatus(ctx, sb.ID, false)
		if statusFailed(&errs, err, "sandbox", sb.ID) {
			continue
		}
		out.Sandboxes = append(out.Sandboxes, sandboxFromCRI(resp.GetStatus()))
	}
	for _, c := range st.Containers {
		resp, err := m.rs.ContainerStatus(ctx, c.ID, false)
		if statusFailed(&errs, err, "container", c.ID) {
			continue
		}
		cs := containerFromCRIStatus(ctx, resp.GetStatus())
		cs.SandboxID = c.SandboxID
		out.Containers = append(out.Containers, cs)
	}
	sortStatus(out)
	return out, errors.Join(errs...)
}

// ListPods groups every sandbox and container the runtime holds that
// carries pod labels by pod UID, from List calls only (no per-container
// exit details): for relist and restart recovery. Objects without pod
// labels are not kernelet's and are left out.
func (m *Manager) ListPods(ctx context.Context) ([]*PodStatus, error) {
	sbs, err := m.rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := m.rs.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return GroupPods(ctx, sbs, ctrs), nil
}

// GroupPods groups listed sandboxes and containers by the pod UID label,
// pods sorted by namespace, name and UID.
func GroupPods(ctx context.Context, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) []*PodStatus {
	byUID := map[types.UID]*PodStatus{}
	get := func(info podconfig.SandboxInfo) *PodStatus {
		uid := types.UID(info.PodUID)
		p := byUID[uid]
		if p == nil {
			p = &PodStatus{UID: uid, Name: info.PodName, Namespace: info.PodNamespace}
			byUID[uid] = p
		}
		return p
	}
	for _, sb := range sbs {
		info, err := podconfig.ParseSandboxLabels(sb.GetLabels())
		if err != nil {
			continue
		}
		p := get(info)
		p.Sandboxes = append(p.Sandboxes, &SandboxStatus{
			ID: sb.Id, Attempt: sb.GetMetadata().GetAttempt(), Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: nanoTime(sb.CreatedAt),
		})
	}
	for _, c := range ctrs {
		ci, err := podconfig.ParseContainer(c.GetLabels(), c.GetAnnotations())
		if ci.PodUID == "" || ci.ContainerName == "" {
			continue
		}
		if err != nil {
			klog.FromContext(ctx).V(4).Info("container annotations", "id", c.Id, "err", err)
		}
		p := get(podconfig.SandboxInfo{PodName: ci.PodName, PodNamespace: ci.PodNamespace, PodUID: ci.PodUID})
		p.Containers = append(p.Containers, &ContainerStatus{
			ID: c.Id, SandboxID: c.PodSandboxId, Name: ci.ContainerName,
			Image: c.GetImage().GetImage(), ImageRef: c.ImageRef, State: stateFromCRI(c.State),
			CreatedAt: nanoTime(c.CreatedAt), RestartCount: ci.RestartCount, Hash: ci.Hash, RestartAllEpoch: ci.RestartAllEpoch,
			PreStop: ci.PreStop, TerminationGracePeriod: ci.TerminationGracePeriod, DeletionGracePeriod: ci.DeletionGracePeriod,
		})
	}
	out := make([]*PodStatus, 0, len(byUID))
	for _, p := range byUID {
		sortStatus(p)
		out = append(out, p)
	}
	SortPods(out)
	return out
}

// SortPods sorts pods by namespace, name and UID (ListPods' order).
func SortPods(pods []*PodStatus) {
	ref := func(p *PodStatus) podutil.Ref { return podutil.Ref{Namespace: p.Namespace, Name: p.Name, UID: p.UID} }
	slices.SortFunc(pods, func(a, b *PodStatus) int { return podutil.Compare(ref(a), ref(b)) })
}

// SameState tells whether a and b hold the same sandboxes and containers
// (by ID) in the same states (sandbox readiness, container state): a
// relist's view of a pod (ListPods) against a full read of it
// (GetPodStatus) says whether anything the lists show changed since.
func SameState(a, b *PodStatus) bool {
	sandbox := func(s *SandboxStatus) (string, bool) { return s.ID, s.Ready }
	container := func(c *ContainerStatus) (string, ContainerState) { return c.ID, c.State }
	return sameByID(a.Sandboxes, b.Sandboxes, sandbox) && sameByID(a.Containers, b.Containers, container)
}

// sameByID tells whether a and b hold the same IDs with equal values (of
// gives each object's ID and value).
func sameByID[T any, V comparable](a, b []T, of func(T) (string, V)) bool {
	if len(a) != len(b) {
		return false
	}
	vals := make(map[string]V, len(a))
	for _, x := range a {
		id, v := of(x)
		vals[id] = v
	}
	for _, x := range b {
		id, v := of(x)
		if w, ok := vals[id]; !ok || w != v {
			return false
		}
	}
	return true
}

// Orphans returns the listed pods no source wants: their sandboxes and
// containers are to be killed.
func Orphans(listed []*PodStatus, wanted map[types.UID]bool) []*PodStatus {
	var out []*PodStatus
	for _, p := range listed {
		if !wanted[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

func sortStatus(st *PodStatus) {
	sort.SliceStable(st.Sandboxes, func(i, j int) bool {
		a, b := st.Sandboxes[i], st.Sandboxes[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.Attempt > b.Attempt
	})
	sort.SliceStable(st.Containers, func(i, j int) bool {
		a, b := st.Containers[i], st.Containers[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.RestartCount > b.RestartCount
	})
}

func nanoTime(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func stateFromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	}
	return ContainerUnknown
}

func sandboxFromCRI(s *runtimeapi.PodSandboxStatus) *SandboxStatus {
	sb := &SandboxStatus{
		ID: s.GetId(), Attempt: s.GetMetadata().GetAttempt(),
		Ready:       s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY,
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
		CreatedAt:   nanoTime(s.GetCreatedAt()),
	}
	if ip := s.GetNetwork().GetIp(); ip != "" {
		sb.IPs = append(sb.IPs, ip)
	}
	for _, ip := range s.GetNetwork().GetAdditionalIps() {
		if ip.GetIp() != "" {
			sb.IPs = append(sb.IPs, ip.GetIp())
		}
	}
	return sb
}

func containerFromCRIStatus(ctx context.Context, s *runtimeapi.ContainerStatus) *ContainerStatus {
	ci, err := podconfig.ParseContainer(s.GetLabels(), s.GetAnnotations())
	if err != nil {
		klog.FromContext(ctx).V(4).Info("container labels", "id", s.GetId(), "err", err)
	}
	name := ci.ContainerName
	if name == "" {
		name = s.GetMetadata().GetName()
	}
	msg := s.GetMessage()
	if s.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
		if t := TerminationMessage(s, ci.TerminationMessagePath, ci.TerminationMessagePolicy); t != "" {
			if msg != "" {
				msg += ": "
			}
			msg += t
		}
	}
	return &ContainerStatus{
		ID: s.GetId(), Name: name, Image: s.GetImage().GetImage(), ImageRef: s.GetImageRef(),
		State:     stateFromCRI(s.GetState()),
		CreatedAt: nanoTime(s.GetCreatedAt()), StartedAt: nanoTime(s.GetStartedAt()), FinishedAt: nanoTime(s.GetFinishedAt()),
		ExitCode: s.GetExitCode(), Reason: s.GetReason(), Message: msg,
		RestartCount: ci.RestartCount, Hash: ci.Hash, RestartAllEpoch: ci.RestartAllEpoch, PreStop: ci.PreStop, TerminationGracePeriod: ci.TerminationGracePeriod, DeletionGracePeriod: ci.DeletionGracePeriod,
		Resources:   s.GetResources().GetLinux(),
		ImageMounts: imageMounts(s.GetMounts()),
	}
}

// imageMounts are the image mounts of a CRI container status by
// container path.
func imageMounts(ms []*runtimeapi.Mount) map[string]string {
	var out map[string]string
	for _, m := range ms {
		if img := m.GetImage().GetImage(); img != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[m.GetContainerPath()] = img
		}
	}
	return out
}

// statusFailed tells whether a status call of the sandbox or container id
// failed: one gone meanwhile (NotFound) is skipped, other failures are
// added to errs.
func statusFailed(errs *[]error, err error, kind, id string) bool {
	if err != nil && !isNotFound(err) {
		*errs = append(*errs, fmt.Errorf("status of %s %s: %w", kind, id, err))
	}
	return err != nil
}
