package volumemanager

import (
	"context"
	"slices"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
)

// volumeHealthConditions are the API conditions of a driver's
// NodeGetVolumeHealth answer: DEGRADED, INACCESSIBLE and DATA_LOSS
// entries (kubelet's Degraded, Inaccessible, DataLoss); entries of other
// types are ignored, as the CSI spec asks of a CO.
func volumeHealthConditions(vh *csipb.VolumeHealth) []v1.VolumeHealthCondition {
	var out []v1.VolumeHealthCondition
	for _, e := range vh.GetHealthStatuses() {
		var st v1.VolumeHealthStatusType
		switch e.GetStatus() {
		case csipb.VolumeHealthErrorType_DEGRADED:
			st = v1.VolumeHealthDegraded
		case csipb.VolumeHealthErrorType_INACCESSIBLE:
			st = v1.VolumeHealthInaccessible
		case csipb.VolumeHealthErrorType_DATA_LOSS:
			st = v1.VolumeHealthDataLoss
		default:
			continue
		}
		out = append(out, v1.VolumeHealthCondition{Status: st, Reason: e.GetReason(), Message: e.GetMessage()})
	}
	return out
}

// sameVolumeHealth tells whether two condition lists name the same set
// of (status, reason): a changed message alone is no change, as with
// kubelet.
func sameVolumeHealth(a, b []v1.VolumeHealthCondition) bool {
	type key struct {
		st     v1.VolumeHealthStatusType
		reason string
	}
	set := func(cs []v1.VolumeHealthCondition) map[key]bool {
		s := make(map[key]bool, len(cs))
		for _, c := range cs {
			s[key{c.Status, c.Reason}] = true
		}
		return s
	}
	sa, sb := set(a), set(b)
	if len(sa) != len(sb) {
		return false
	}
	for k := range sa {
		if !sb[k] {
			return false
		}
	}
	return true
}

// withVolumeHealth is a pod's status.volumeHealth once volume name was
// probed with conds at now, and whether it changed: an entry appears with
// the first adverse condition and then follows the set of conditions
// (lastTransitionTime when it changes); a volume that recovers keeps its
// entry with no condition, as kubelet's status manager keeps it.
func withVolumeHealth(health []v1.PodVolumeHealth, name string, conds []v1.VolumeHealthCondition, now metav1.Time) ([]v1.PodVolumeHealth, bool) {
	i := slices.IndexFunc(health, func(h v1.PodVolumeHealth) bool { return h.Name == name })
	var old []v1.VolumeHealthCondition
	if i >= 0 {
		old = health[i].HealthConditions
	}
	if sameVolumeHealth(old, conds) {
		return health, false
	}
	out := slices.Clone(health)
	entry := v1.PodVolumeHealth{Name: name, HealthConditions: slices.Clone(conds), LastTransitionTime: now}
	if i >= 0 {
		out[i] = entry
	} else {
		out = append(out, entry)
	}
	return out, true
}

// healthTarget is a published volume whose health is asked.
type healthTarget struct {
	uid                  types.UID
	name, driver, handle string
	// staging is asked only of a driver that stages.
	staging, publish string
}

// healthTargets are the pods' published CSI persistent volumes (claims
// and generic ephemeral volumes; not CSI inline volumes, whose handle
// kubelet does not report on, nor hostPath PVs).
func (m *Manager) healthTargets() []healthTarget {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []healthTarget
	for uid, specs := range m.resolved {
		for name, spec := range specs {
			if spec.Inline || spec.Driver == "" {
				continue
			}
			pub := m.published[uid][spec.PVName]
			if pub == nil || !pub.mounted {
				continue
			}
			out = append(out, healthTarget{uid: uid, name: name, driver: spec.Driver, handle: spec.Handle,
				staging: pathsOf(m.cfg.RootDir, m.cfg.PodsDir, uid, spec).staging, publish: pub.target})
		}
	}
	return out
}

// ProbeHealth asks the driver of each published CSI persistent volume
// that has GET_VOLUME_HEALTH for its health (NodeGetVolumeHealth) and
// returns the pods whose status.volumeHealth changed (VolumeHealth). A
// failed call leaves the volume's last conditions, as kubelet does.
// kubelet runs it every volumeStatsAggPeriod with the CSIVolumeHealth
// gate.
func (m *Manager) ProbeHealth(ctx context.Context) []types.UID {
	log := klog.FromContext(ctx)
	var changed []types.UID
	for _, t := range m.healthTargets() {
		var conds []v1.VolumeHealthCondition
		supported := true
		err := m.withDriver(ctx, t.driver, func(ctx context.Context, c *csi.Client) error {
			caps, err := c.NodeGetCapabilities(ctx)
			if err != nil || !caps.VolumeHealth {
				supported = false
				return err
			}
			staging := ""
			if caps.StageUnstage {
				staging = t.staging
			}
			resp, err := c.Node().NodeGetVolumeHealth(ctx, &csipb.NodeGetVolumeHealthRequest{VolumeId: t.handle,
				StagingTargetPath: staging, VolumePublishPath: t.publish})
			conds = volumeHealthConditions(resp.GetVolumeHealth())
			return err
		})
		if err != nil || !supported {
			if err != nil {
				log.V(4).Info("Volume health not read; the last conditions stay", "podUID", t.uid, "volume", t.name, "err", err)
			}
			continue
		}
		m.mu.Lock()
		if _, live := m.resolved[t.uid]; live {
			next, ok := withVolumeHealth(m.health[t.uid], t.name, conds, metav1.NewTime(m.now()))
			if ok {
				m.health[t.uid] = next
				changed = append(changed, t.uid)
			}
		}
		m.mu.Unlock()
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// RunHealth runs ProbeHealth every period (none when 0) and wakes the
// pods whose status.volumeHealth changed, until ctx ends.
func (m *Manager) RunHealth(ctx context.Context, period time.Duration, wake func(types.UID)) {
	if period <= 0 {
		return
	}
	_ = wait.Backoff{Duration: period}.DelayFunc().Until(ctx, false, true, func(ctx context.Context) (bool, error) {
		for _, uid := range m.ProbeHealth(ctx) {
			wake(uid)
		}
		return false, nil
	})
}

// VolumeHealth is pod uid's status.volumeHealth (ProbeHealth).
func (m *Manager) VolumeHealth(uid types.UID) []v1.PodVolumeHealth {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]v1.PodVolumeHealth, 0, len(m.health[uid]))
	for _, h := range m.health[uid] {
		out = append(out, *h.DeepCopy())
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
