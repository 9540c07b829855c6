package eviction

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// The signals of local storage limit evictions (kubelet's labels of
// kubelet_evictions for them; no threshold uses them).
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// Kubelet's messages of local storage limit evictions.
const (
	emptyDirFmt           = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// LocalStorageViolation is why a pod exceeds one of its local storage
// limits: the limit's signal and kubelet's message.
type LocalStorageViolation struct {
	Signal  Signal
	Message string
}

// CheckLocalStorage reports the first local storage limit pod exceeds,
// checked as kubelet does (localStorageCapacityIsolation): an emptyDir
// using more than its sizeLimit (volumes in spec order); the pod's
// ephemeral storage (writable layers, logs, local volumes) above the
// pod's ephemeral-storage limit (containers' limits, as the scheduler
// sums them); a container whose logs (plus its writable layer without a
// dedicated image filesystem) exceed its ephemeral-storage limit. ok is
// false when the pod has no storage stats or exceeds nothing.
func CheckLocalStorage(pod *v1.Pod, ps PodStats) (_ LocalStorageViolation, ok bool) {
	st := ps.Storage
	if st == nil {
		return LocalStorageViolation{}, false
	}
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		if u, ok := st.Volumes[vol.Name]; ok && u.Bytes > ed.SizeLimit.Value() {
			return LocalStorageViolation{Signal: SignalEmptyDirFsLimit,
				Message: fmt.Sprintf(emptyDirFmt, vol.Name, ed.SizeLimit.String())}, true
		}
	}
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceEphemeralStorage]; ok {
		if st.Total().Bytes > limit.Value() {
			return LocalStorageViolation{Signal: SignalEphemeralPodFsLimit,
				Message: fmt.Sprintf(podEphemeralFmt, limit.String())}, true
		}
	}
	for _, c := range pod.Spec.Containers {
		limit, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok || limit.IsZero() {
			continue
		}
		if u, ok := st.ContainerUsage(c.Name); ok && u.Bytes > limit.Value() {
			return LocalStorageViolation{Signal: SignalEphemeralContainerFsLimit,
				Message: fmt.Sprintf(containerEphemeralFmt, c.Name, limit.String())}, true
		}
	}
	return LocalStorageViolation{}, false
}

// evictLocalStorage evicts every active pod over one of its local
// storage limits (kubelet's grace: HardGracePeriod; no DisruptionTarget
// condition, as kubelet); it reports whether it evicted any, in which
// case the decision ends there, as in kubelet.
func (m *Manager) evictLocalStorage(ctx context.Context, active []*v1.Pod, stats Stats, now time.Time) bool {
	log := klog.FromContext(ctx)
	evicted := false
	for _, pod := range active {
		if podutil.IsCritical(pod) || m.isPending(pod.UID) {
			continue
		}
		ps, ok := stats.Pods[pod.UID]
		if !ok {
			continue
		}
		viol, ok := CheckLocalStorage(pod, ps)
		if !ok {
			continue
		}
		g := HardGracePeriod
		e := Eviction{Signal: viol.Signal, Resource: v1.ResourceEphemeralStorage, Message: viol.Message,
			GracePeriod: &g, NoDisruptionCondition: true}
		if err := m.cfg.Evict(ctx, pod, e); err != nil {
			log.Error(err, "Eviction manager: evicting pod over its local storage limit failed", "pod", klog.KObj(pod))
			continue
		}
		log.Info("Eviction manager: evicting pod over its local storage limit", "pod", klog.KObj(pod), "podUID", pod.UID,
			"signal", viol.Signal, "usage", resource.NewQuantity(ps.Storage.Total().Bytes, resource.BinarySI).String())
		m.started(pod, viol.Signal, viol.Message, now, 0, 0, 0)
		evicted = true
	}
	return evicted
}
