package agent

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/podresources"
	"github.com/kernelet/kernelet/agent/runtime"
)

// startDevices starts the device plugin manager on
// <root-dir>/device-plugins (it serves until ctx ends; Wait after).
func (a *Agent) startDevices(ctx context.Context, p *pods) (*devicemanager.Manager, error) {
	nodes, err := a.numaNodes()
	if err != nil {
		return nil, fmt.Errorf("device manager: %w", err)
	}
	dm := devicemanager.New(devicemanager.Config{Dir: filepath.Join(a.opts.RootDir, devicemanager.DirName), Now: a.deps.Now,
		Metrics: a.metrics.devices, NUMANodes: nodes.Nodes(), Running: p.containerRunning})
	if err := dm.Start(ctx); err != nil {
		return nil, err
	}
	return dm, nil
}

// servePodResources serves the podresources API on
// <root-dir>/pod-resources until ctx ends.
func (a *Agent) servePodResources(ctx context.Context, p *pods) {
	srv := podresources.New(podresources.WorkerPods(p.workers.Pods), p.devices, a.metrics.podResources).
		WithCPUs(podresources.CPUManager(p.cpus)).WithMemory(podresources.MemoryManager(p.mem)).WithClaims(p.claims)
	dir := filepath.Join(a.opts.RootDir, podresources.DirName)
	if err := srv.Serve(ctx, dir, podresources.DefaultQPS, podresources.DefaultBurst); err != nil {
		klog.FromContext(ctx).Error(err, "The podresources API stopped")
	}
}

// dispatchDeviceHealth wakes the workers of the pods whose devices (of
// device plugins or DRA claims) changed health, for their status, until
// ctx ends (kubelet's resource updates).
func (p *pods) dispatchDeviceHealth(ctx context.Context) {
	for {
		var uids []types.UID
		select {
		case <-ctx.Done():
			return
		case uids = <-p.devices.HealthUpdates():
		case uids = <-p.claims.HealthUpdates():
		}
		for _, uid := range uids {
			p.workers.Wake(uid)
		}
	}
}

// containerRunning tells whether the PLEG cache (relisted before the pods
// are admitted) has the pod's container running.
func (p *pods) containerRunning(uid types.UID, name string) bool {
	st := p.podStatus(uid)
	if st == nil {
		return false
	}
	for _, c := range st.Containers {
		if c.Name == name && c.State == runtime.ContainerRunning {
			return true
		}
	}
	return false
}

// releaseDevices forgets the devices of a pod whose containers are gone.
func (p *pods) releaseDevices(uid types.UID) {
	if p.devices != nil {
		p.devices.Release(uid)
	}
}
