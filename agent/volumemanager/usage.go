package volumemanager

import (
	"context"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
)

// VolumeUsage is a published volume's usage as its driver's
// NodeGetVolumeStats reports it (kubelet's volume stats; a block volume's
// capacity only, as the driver reports it).
type VolumeUsage struct {
	// Name is the pod's volume, Claim its PVC (in the pod's namespace;
	// "" for a CSI inline volume).
	Name, Claim string
	Time        time.Time
	// The byte and inode counts; a count the driver did not report is 0.
	CapacityBytes, AvailableBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
}

// usageTimeout bounds one NodeGetVolumeStats.
const usageTimeout = 5 * time.Second

// Usage returns the usage of pod's published CSI volumes whose drivers
// report it (GET_VOLUME_STATS), each read again once older than maxAge
// (volumeStatsAggPeriod; 0: never read). A volume whose driver fails is
// left out.
func (m *Manager) Usage(ctx context.Context, pod *v1.Pod, maxAge time.Duration) []VolumeUsage {
	if maxAge <= 0 {
		return nil
	}
	var out []VolumeUsage
	for _, v := range csiVolumes(pod) {
		m.mu.Lock()
		spec, ok := m.resolved[pod.UID][v.Name]
		var pub *publishedVol
		if ok {
			pub = m.published[pod.UID][spec.PVName]
		}
		cached, fresh := m.usage[usageKey{pod.UID, v.Name}]
		m.mu.Unlock()
		if pub == nil || !pub.mounted {
			continue
		}
		if fresh && m.now().Sub(cached.Time) < maxAge {
			out = append(out, cached)
			continue
		}
		u, err := m.readUsage(ctx, spec, pub.target)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Volume stats not read", "pod", klog.KObj(pod), "volume", v.Name, "err", err)
			continue
		}
		claim := ""
		if IsClaimVolume(v) {
			claim, _, _ = claimOf(pod, v)
		}
		u.Name, u.Claim, u.Time = v.Name, claim, m.now()
		m.mu.Lock()
		m.usage[usageKey{pod.UID, v.Name}] = u
		m.mu.Unlock()
		out = append(out, u)
	}
	return out
}

// usageKey names a pod's volume.
type usageKey struct {
	uid  types.UID
	name string
}

// errNoStats is a driver without GET_VOLUME_STATS.
type errNoStats struct{}

func (errNoStats) Error() string { return "the driver does not report volume stats" }

func (m *Manager) readUsage(ctx context.Context, spec volumeSpec, target string) (VolumeUsage, error) {
	var u VolumeUsage
	err := m.call(ctx, spec.Driver, func(ctx context.Context, c *csi.Client) error {
		ctx, cancel := context.WithTimeout(ctx, usageTimeout)
		defer cancel()
		caps, err := c.NodeGetCapabilities(ctx)
		if err != nil {
			return err
		}
		if !caps.VolumeStats {
			return errNoStats{}
		}
		resp, err := c.Node().NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: spec.Handle, VolumePath: target})
		if err != nil {
			return err
		}
		for _, x := range resp.GetUsage() {
			switch x.GetUnit() {
			case csipb.VolumeUsage_BYTES:
				u.CapacityBytes, u.AvailableBytes, u.UsedBytes = x.GetTotal(), x.GetAvailable(), x.GetUsed()
			case csipb.VolumeUsage_INODES:
				u.Inodes, u.InodesFree, u.InodesUsed = x.GetTotal(), x.GetAvailable(), x.GetUsed()
			}
		}
		return nil
	})
	return u, err
}
