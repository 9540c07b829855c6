package pods

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// syncMirrors creates, replaces and deletes mirror pods (MirrorActions).
// Nothing happens until the Node's UID is known: mirrors are owned by it.
func (m *Manager) syncMirrors(ctx context.Context) error {
	nodeUID := m.cfg.NodeUID()
	if nodeUID == "" {
		return nil
	}
	m.mu.Lock()
	statics := make([]*v1.Pod, 0, len(m.statics))
	for _, p := range m.statics {
		statics = append(statics, p)
	}
	m.mu.Unlock()
	api, err := m.cfg.Pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	plan := MirrorActions(statics, api)
	log := klog.FromContext(ctx)
	var errs []error
	for _, p := range plan.Delete {
		log.V(2).Info("Deleting mirror pod", "pod", klog.KObj(p), "podUID", p.UID)
		if err := m.deleteNow(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range plan.Create {
		mp := MirrorPod(s, m.cfg.NodeName, nodeUID)
		_, err := m.cfg.Client.Pods(mp.Namespace).Create(ctx, mp, metav1.CreateOptions{})
		switch {
		case err == nil:
			log.V(2).Info("Created mirror pod", "pod", klog.KObj(mp), "staticPodUID", s.UID)
		case apierrors.IsAlreadyExists(err):
			// The informer has not seen it yet: the next round checks it.
		default:
			errs = append(errs, fmt.Errorf("create mirror pod %s/%s: %w", mp.Namespace, mp.Name, err))
		}
	}
	for _, s := range plan.Conflicts {
		log.V(2).Info("A pod that is not a mirror holds the static pod's name; no mirror pod", "pod", klog.KObj(s))
	}
	return errors.Join(errs...)
}
