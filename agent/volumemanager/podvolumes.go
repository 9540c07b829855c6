package volumemanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// InTree is the in-tree volume manager (agent/volume.Manager).
type InTree interface {
	SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error)
	TearDown(ctx context.Context, uid types.UID) error
	SubPath(ctx context.Context, pod *v1.Pod, req podconfig.SubPathRequest) (string, error)
}

// PodVolumes sets up a pod's volumes with both managers: the in-tree ones
// first (the pod handed without its PVC, generic ephemeral and CSI inline volumes),
// then the CSI ones; it
// tears them down in the other order of dependence: the in-tree side
// first (its subPath bind mounts pin the CSI volumes' files), then the
// CSI volumes, then the empty volumes directory.
type PodVolumes struct {
	InTree InTree
	CSI    *Manager
}

// SetUp returns every volume's host path; the error joins both sides'.
func (p PodVolumes) SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	if !Handles(pod) {
		return p.InTree.SetUp(ctx, pod)
	}
	inTree := *pod
	inTree.Spec.Volumes = nil
	for _, v := range pod.Spec.Volumes {
		if !IsCSIVolume(v) {
			inTree.Spec.Volumes = append(inTree.Spec.Volumes, v)
		}
	}
	paths, err := p.InTree.SetUp(ctx, &inTree)
	if paths == nil {
		paths = map[string]string{}
	}
	csiPaths, csiErr := p.CSI.SetUp(ctx, pod)
	for k, v := range csiPaths {
		paths[k] = v
	}
	return paths, errors.Join(err, csiErr)
}

// TearDown removes the pod's volumes, in-tree then CSI.
func (p PodVolumes) TearDown(ctx context.Context, uid types.UID) error {
	if err := p.InTree.TearDown(ctx, uid); err != nil {
		return err
	}
	if err := p.CSI.TearDown(ctx, uid); err != nil {
		return err
	}
	err := removeEmpty(filepath.Join(p.CSI.cfg.PodsDir, string(uid), "volumes"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ExtraSupplementalGroups are the CSI manager's (the PV gid annotations).
func (p PodVolumes) ExtraSupplementalGroups(pod *v1.Pod) []int64 {
	return p.CSI.ExtraSupplementalGroups(pod)
}

// SubPath is the in-tree manager's (it works on any volume's host path).
func (p PodVolumes) SubPath(ctx context.Context, pod *v1.Pod, req podconfig.SubPathRequest) (string, error) {
	return p.InTree.SubPath(ctx, pod, req)
}
