package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// maxStorageHealthConditions is the most conditions a driver may report
// (the API's limit; kubelet refuses a longer answer).
const maxStorageHealthConditions = 16

// StorageHealthConditions are the API conditions of a driver's
// NodeGetStorageHealth answer: STORAGE_UNREACHABLE and STORAGE_DEGRADED
// entries (others ignored), a volume capability mapped to the access
// and volume mode it affects as kubelet maps them.
func StorageHealthConditions(entries []*csipb.NodeGetStorageHealthResponse_StorageBackendHealth) ([]storagev1.StorageHealthCondition, error) {
	if len(entries) > maxStorageHealthConditions {
		return nil, fmt.Errorf("NodeGetStorageHealth returned %d conditions, maximum is %d", len(entries), maxStorageHealthConditions)
	}
	var out []storagev1.StorageHealthCondition
	for i, e := range entries {
		var st storagev1.StorageHealthStatusType
		switch e.GetStatus() {
		case csipb.StorageHealthErrorType_STORAGE_UNREACHABLE:
			st = storagev1.StorageUnreachable
		case csipb.StorageHealthErrorType_STORAGE_DEGRADED:
			st = storagev1.StorageDegraded
		default:
			continue
		}
		c := storagev1.StorageHealthCondition{Status: st, Reason: e.GetReason(), Message: e.GetMessage()}
		if vc := e.GetVolumeCapability(); vc != nil {
			am, vm, err := capabilityModes(vc)
			if err != nil {
				return nil, fmt.Errorf("NodeGetStorageHealth condition %d has invalid volume capability: %w", i, err)
			}
			c.AccessMode, c.VolumeMode = &am, &vm
		}
		out = append(out, c)
	}
	return out, nil
}

// capabilityModes is the access mode and volume mode of a CSI volume
// capability.
func capabilityModes(vc *csipb.VolumeCapability) (v1.PersistentVolumeAccessMode, v1.PersistentVolumeMode, error) {
	var vm v1.PersistentVolumeMode
	switch vc.GetAccessType().(type) {
	case *csipb.VolumeCapability_Block:
		vm = v1.PersistentVolumeBlock
	case *csipb.VolumeCapability_Mount:
		vm = v1.PersistentVolumeFilesystem
	default:
		return "", "", fmt.Errorf("access type is required")
	}
	if vc.GetAccessMode() == nil {
		return "", "", fmt.Errorf("access mode is required")
	}
	switch m := vc.GetAccessMode().GetMode(); m {
	case csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return v1.ReadWriteOnce, vm, nil
	case csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER:
		return v1.ReadWriteOncePod, vm, nil
	case csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		return v1.ReadOnlyMany, vm, nil
	case csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return v1.ReadWriteMany, vm, nil
	default:
		return "", "", fmt.Errorf("unsupported access mode %q", m)
	}
}

// storageHealthKey is what makes a condition another: its status,
// reason, access and volume mode (not its message).
type storageHealthKey struct{ status, reason, accessMode, volumeMode string }

func storageHealthKeys(cs []storagev1.StorageHealthCondition) map[storageHealthKey]bool {
	out := make(map[storageHealthKey]bool, len(cs))
	for _, c := range cs {
		k := storageHealthKey{status: string(c.Status), reason: c.Reason}
		if c.AccessMode != nil {
			k.accessMode = string(*c.AccessMode)
		}
		if c.VolumeMode != nil {
			k.volumeMode = string(*c.VolumeMode)
		}
		out[k] = true
	}
	return out
}

// WithStorageHealth is a CSINode's status.storageHealth once driver
// reported conds, and whether it changed: the driver's entry replaced
// (removed when conds is empty) when the set of conditions differs, the
// other drivers' entries kept.
func WithStorageHealth(health []storagev1.StorageHealth, driver string, conds []storagev1.StorageHealthCondition) ([]storagev1.StorageHealth, bool) {
	var old []storagev1.StorageHealthCondition
	out := make([]storagev1.StorageHealth, 0, len(health)+1)
	for _, h := range health {
		if h.Name == driver {
			old = h.HealthConditions
			continue
		}
		out = append(out, h)
	}
	oldKeys, newKeys := storageHealthKeys(old), storageHealthKeys(conds)
	if len(oldKeys) == len(newKeys) && func() bool {
		for k := range newKeys {
			if !oldKeys[k] {
				return false
			}
		}
		return true
	}() {
		return health, false
	}
	if len(conds) > 0 {
		out = append(out, storagev1.StorageHealth{Name: driver, HealthConditions: conds})
	}
	return out, true
}

// UpdateStorageHealth writes driver's conditions in the CSINode's
// status.storageHealth when they changed (retried on conflicts).
func (n *NodeInfo) UpdateStorageHealth(ctx context.Context, driver string, conds []storagev1.StorageHealthCondition) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cn, err := n.client.CSINodes().Get(ctx, n.nodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("CSINode: %w", err)
		}
		next, changed := WithStorageHealth(cn.Status.StorageHealth, driver, conds)
		if !changed {
			return nil
		}
		// A merge patch of the whole list at the version read: a
		// concurrent change is a conflict, retried.
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cn.ResourceVersion},
			"status": map[string]any{"storageHealth": next}})
		if err != nil {
			return err
		}
		_, err = n.client.CSINodes().Patch(ctx, n.nodeName, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// StorageHealth probes the registered drivers' storage backends
// (NodeGetStorageHealth, drivers with GET_STORAGE_HEALTH) into the
// CSINode's status.storageHealth and serves kubelet's
// csi_node_storage_health_status{driver_name,status,reason} (1 per
// condition reported).
type StorageHealth struct {
	desc *prometheus.Desc

	mu    sync.Mutex
	conds map[string][]storagev1.StorageHealthCondition
}

// NewStorageHealth returns the prober and collector, not registered.
func NewStorageHealth() *StorageHealth {
	return &StorageHealth{conds: map[string][]storagev1.StorageHealthCondition{},
		desc: prometheus.NewDesc("csi_node_storage_health_status",
			"CSI node storage backend health conditions currently reported (1 = present).",
			[]string{"driver_name", "status", "reason"}, nil)}
}

// Describe implements prometheus.Collector.
func (s *StorageHealth) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

// Collect implements prometheus.Collector.
func (s *StorageHealth) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for driver, cs := range s.conds {
		seen := map[[2]string]bool{}
		for _, c := range cs {
			k := [2]string{string(c.Status), c.Reason}
			if !seen[k] {
				seen[k] = true
				ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, 1, driver, k[0], k[1])
			}
		}
	}
}

// Run probes every period (none when 0) until ctx ends.
func (s *StorageHealth) Run(ctx context.Context, period time.Duration, r *Registry, nodeInfo *NodeInfo) {
	if period <= 0 {
		return
	}
	_ = wait.Backoff{Duration: period}.DelayFunc().Until(ctx, false, true, func(ctx context.Context) (bool, error) {
		s.Probe(ctx, r, nodeInfo)
		return false, nil
	})
}

// Probe asks each driver of r once; a driver that fails keeps its last
// conditions, as kubelet leaves them. nodeInfo nil: the metric only.
func (s *StorageHealth) Probe(ctx context.Context, r *Registry, nodeInfo *NodeInfo) {
	log := klog.FromContext(ctx)
	registered := r.Drivers()
	s.mu.Lock()
	for driver := range s.conds {
		if !slices.Contains(registered, driver) {
			delete(s.conds, driver)
		}
	}
	s.mu.Unlock()
	for _, name := range registered {
		conds, supported, err := r.storageHealth(ctx, name)
		if err != nil {
			log.V(4).Info("NodeGetStorageHealth failed; the last conditions stay", "driver", name, "err", err)
			continue
		}
		if !supported {
			continue
		}
		s.mu.Lock()
		s.conds[name] = conds
		s.mu.Unlock()
		if nodeInfo != nil {
			if err := nodeInfo.UpdateStorageHealth(ctx, name, conds); err != nil {
				log.Error(err, "Failed to update CSINode storage health", "driver", name)
			}
		}
	}
}

// storageHealth asks driver name for its backend's conditions.
func (r *Registry) storageHealth(ctx context.Context, name string) ([]storagev1.StorageHealthCondition, bool, error) {
	d, err := r.Lookup(name)
	if err != nil {
		return nil, false, err
	}
	c, err := r.dial(d.Endpoint)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil || !caps.StorageHealth {
		return nil, false, err
	}
	resp, err := c.Node().NodeGetStorageHealth(ctx, &csipb.NodeGetStorageHealthRequest{})
	if err != nil {
		return nil, true, fmt.Errorf("NodeGetStorageHealth: %w", err)
	}
	conds, err := StorageHealthConditions(resp.GetBackendHealth())
	return conds, true, err
}
