package agent

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/podresources"
	"github.com/kernelet/kernelet/internal/podutil"
)

// startDevices starts the device plugin manager on
// <root-dir>/device-plugins (it serves until ctx ends; Wait after).
func (a *Agent) startDevices(ctx context.Context) (*devicemanager.Manager, error) {
	dm := devicemanager.New(devicemanager.Config{Dir: filepath.Join(a.opts.RootDir, devicemanager.DirName), Now: a.deps.Now,
		Metrics: a.metrics.devices})
	if err := dm.Start(ctx); err != nil {
		return nil, err
	}
	return dm, nil
}

// servePodResources serves the podresources API on
// <root-dir>/pod-resources until ctx ends.
func (a *Agent) servePodResources(ctx context.Context, p *pods) {
	srv := podresources.New(podResourcesPods{p}, p.devices, a.metrics.podResources)
	dir := filepath.Join(a.opts.RootDir, podresources.DirName)
	if err := srv.Serve(ctx, dir, podresources.DefaultQPS, podresources.DefaultBurst); err != nil {
		klog.FromContext(ctx).Error(err, "The podresources API stopped")
	}
}

// podResourcesPods are the workers' pods as the podresources API sees
// them: the active ones are admitted and not finished.
type podResourcesPods struct{ p *pods }

func (pp podResourcesPods) ActivePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range pp.p.workers.Pods() {
		if r.Finished || podutil.IsTerminal(r.Status.Phase) {
			continue
		}
		out = append(out, r.Pod)
	}
	return out
}

func (pp podResourcesPods) Pod(namespace, name string) (*v1.Pod, bool) {
	for _, r := range pp.p.workers.Pods() {
		if r.Pod.Namespace == namespace && r.Pod.Name == name {
			return r.Pod, true
		}
	}
	return nil, false
}

// extendedAllocatable is what admission counts of the extended resources:
// the Node's (an admin's, in a cluster) with the device plugins' over
// them.
func (a *Agent) extendedAllocatable(dm *devicemanager.Manager) func() map[v1.ResourceName]int64 {
	return func() map[v1.ResourceName]int64 {
		out := map[v1.ResourceName]int64{}
		if n := a.node(); n != nil {
			for name, q := range n.Status.Allocatable {
				if devicemanager.IsExtendedResourceName(string(name)) {
					out[name] = q.Value()
				}
			}
		}
		for name, n := range dm.Offered() {
			out[v1.ResourceName(name)] = n
		}
		return out
	}
}

// releaseDevices forgets the devices of a pod whose containers are gone.
func (p *pods) releaseDevices(uid types.UID) {
	if p.devices != nil {
		p.devices.Release(uid)
	}
}
