package runtime

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// SandboxEvent is what one CRI container event (GetContainerEvents) says
// about one sandbox of a pod: the sandbox's status and the statuses of
// every container in it, as the runtime read them when it made the event.
type SandboxEvent struct {
	UID       types.UID
	Name      string
	Namespace string
	// SandboxID is the sandbox the event is about.
	SandboxID string
	// Sandbox is its status; nil when the sandbox was deleted.
	Sandbox *SandboxStatus
	// Containers are the containers of the sandbox, newest first.
	Containers []*ContainerStatus
	// At is when the runtime made the event.
	At time.Time
}

// SandboxEventFromCRI reads a CRI container event. ok is false when the
// event says nothing usable about a kernelet pod: no sandbox status (the
// sandbox went before the runtime could read it) or no pod labels (not
// kernelet's). A CONTAINER_DELETED_EVENT whose container is the sandbox
// itself says the sandbox and its containers are gone.
func SandboxEventFromCRI(ctx context.Context, ev *runtimeapi.ContainerEventResponse) (SandboxEvent, bool) {
	sb := ev.GetPodSandboxStatus()
	if sb == nil || sb.GetId() == "" {
		return SandboxEvent{}, false
	}
	info, err := podconfig.ParseSandboxLabels(sb.GetLabels())
	if err != nil {
		return SandboxEvent{}, false
	}
	out := SandboxEvent{UID: types.UID(info.PodUID), Name: info.PodName, Namespace: info.PodNamespace,
		SandboxID: sb.GetId(), At: nanoTime(ev.GetCreatedAt())}
	if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT && ev.GetContainerId() == sb.GetId() {
		return out, true
	}
	out.Sandbox = sandboxFromCRI(sb)
	for _, c := range ev.GetContainersStatuses() {
		cs := containerFromCRIStatus(ctx, c)
		cs.SandboxID = sb.GetId()
		out.Containers = append(out.Containers, cs)
	}
	tmp := &PodStatus{Containers: out.Containers}
	sortStatus(tmp)
	return out, true
}

// Apply returns st (nil: nothing known of the pod) with the sandbox of e
// and its containers replaced by what e says; the pod's other sandboxes
// and their containers are kept. st is not modified.
func (e SandboxEvent) Apply(st *PodStatus) *PodStatus {
	out := &PodStatus{UID: e.UID, Name: e.Name, Namespace: e.Namespace}
	if st != nil {
		for _, s := range st.Sandboxes {
			if s.ID != e.SandboxID {
				out.Sandboxes = append(out.Sandboxes, s)
			}
		}
		for _, c := range st.Containers {
			if c.SandboxID != e.SandboxID {
				out.Containers = append(out.Containers, c)
			}
		}
	}
	if e.Sandbox != nil {
		out.Sandboxes = append(out.Sandboxes, e.Sandbox)
		out.Containers = append(out.Containers, e.Containers...)
	}
	sortStatus(out)
	return out
}
