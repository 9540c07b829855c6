package runtime

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// CgroupManager is the part of cgroups.Manager CgroupsAdapter uses.
type CgroupManager interface {
	EnsurePod(ctx context.Context, cfg cgroups.QoSConfig, pod cgroups.PodResources) (string, cgroups.CgroupSettings, error)
	Remove(ctx context.Context, cgroup string) error
	PodCgroup(class cgroups.QOSClass, uid string) string
}

// CgroupsAdapter implements PodCgroups over a cgroups.Manager: the pod's
// cgroup is sized from qos.PodResources with Config. The QoS cgroups
// (kubepods, burstable, besteffort) must have been ensured.
type CgroupsAdapter struct {
	Manager CgroupManager
	Config  cgroups.QoSConfig
}

var _ CgroupManager = (*cgroups.Manager)(nil)

// EnsurePod implements PodCgroups.
func (a CgroupsAdapter) EnsurePod(ctx context.Context, pod *v1.Pod) (string, error) {
	cg, _, err := a.Manager.EnsurePod(ctx, a.Config, qos.PodResources(pod))
	return cg, err
}

// RemovePod implements PodCgroups: the pod's cgroup is removed under each
// QoS class (the pod may be gone, and with it its class).
func (a CgroupsAdapter) RemovePod(ctx context.Context, uid types.UID) error {
	var errs []error
	for _, class := range []cgroups.QOSClass{cgroups.Guaranteed, cgroups.Burstable, cgroups.BestEffort} {
		errs = append(errs, a.Manager.Remove(ctx, a.Manager.PodCgroup(class, string(uid))))
	}
	return errors.Join(errs...)
}
