package agent

import (
	"context"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kernelet/kernelet/agent/apiobjects"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/agent/dra"
	"github.com/kernelet/kernelet/agent/pluginmanager"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/agent/volumemanager"
)

// nodePlugins are the node plugins and what they serve: the registration
// watcher of <root-dir>/plugins_registry (agent/pluginmanager) with the
// CSI drivers' handler (agent/csi; the CSINode and the node's CSI
// annotation with the API server), the CSI volume manager
// (agent/volumemanager), whose state is reconstructed from disk here,
// before the pod side starts, and the DRA drivers' (agent/dra).
type nodePlugins struct {
	registry *csi.Registry
	nodeInfo *csi.NodeInfo
	watcher  *pluginmanager.Manager
	volumes  *volumemanager.Manager
	dra      *dra.Manager
	// storageHealth probes the drivers' storage backends every
	// healthPeriod (volumeStatsAggPeriod) with the CSIVolumeHealth gate
	// (0: never).
	storageHealth *csi.StorageHealth
	healthPeriod  time.Duration
	// allocatable re-reads the drivers' volume limits (with the API
	// server; MutableCSINodeAllocatableCount).
	allocatable *csi.AllocatableUpdater
}

// newNodePlugins builds the node plugins' side and reconstructs the CSI
// volumes' state.
func (a *Agent) newNodePlugins(ctx context.Context) *nodePlugins {
	n := &nodePlugins{storageHealth: a.metrics.storageHealth}
	if kc := &a.opts.Config.Kubelet; config.FeatureEnabled(kc, "CSIVolumeHealth") {
		n.healthPeriod = kc.VolumeStatsAggPeriod.Duration
	}
	vcfg := volumemanager.Config{RootDir: a.opts.RootDir, NodeName: a.opts.NodeName,
		Warn:  func(pod *v1.Pod, reason, msg string) { a.recorder.Event(pod, v1.EventTypeWarning, reason, msg) },
		Event: a.recorder.Event}
	if a.clients != nil && a.clients.Main != nil {
		n.nodeInfo = csi.NewNodeInfo(a.clients.Main, a.opts.NodeName)
		n.registry = csi.NewRegistry(n.nodeInfo)
		n.allocatable = csi.NewAllocatableUpdater(n.registry, n.nodeInfo, a.clients.Main)
		vcfg.UpdateDriver = n.allocatable.UpdateDriver
		vcfg.Client = a.clients.Main
		vcfg.Tokens = apiobjects.NewTokenManager(a.clients.Main, nil)
	} else {
		n.registry = csi.NewRegistry(nil)
	}
	vcfg.Drivers = n.registry
	n.dra = dra.New(dra.Config{RootDir: a.opts.RootDir, NodeName: a.opts.NodeName, Client: vcfg.Client, Metrics: a.metrics.dra})
	n.watcher = pluginmanager.New(pluginmanager.Config{
		Dir:      filepath.Join(a.opts.RootDir, "plugins_registry"),
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: n.registry, registerapi.DRAPlugin: n.dra},
	})
	n.volumes = volumemanager.New(vcfg)
	if err := n.volumes.Reconstruct(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Reconstructing the CSI volumes (those read are kept)")
	}
	return n
}

// run watches for plugins and, with the API server, makes sure the node
// owns its CSINode (retried until the Node exists), until ctx is done.
func (n *nodePlugins) run(ctx context.Context) error {
	if n.nodeInfo != nil {
		go func() {
			backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
			_ = backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
				if err := n.nodeInfo.Init(ctx); err != nil {
					klog.FromContext(ctx).V(2).Info("CSINode not initialized yet", "err", err)
					return false, nil
				}
				return true, nil
			})
		}()
	}
	go n.storageHealth.Run(ctx, n.healthPeriod, n.registry, n.nodeInfo)
	if n.allocatable != nil {
		go n.allocatable.Run(ctx)
	}
	return n.watcher.Run(ctx)
}

// podVolumes is what the pod side sets volumes up with: the in-tree
// manager and, when the node plugins run, the CSI volume manager beside
// it (volumemanager.PodVolumes).
func (a *Agent) podVolumes(inTree *volume.Manager) runtime.PodVolumes {
	if a.plugins == nil {
		return inTree
	}
	return volumemanager.PodVolumes{InTree: inTree, CSI: a.plugins.volumes}
}

// podPlugins are the CSI volume manager and the DRA manager (nil when the
// node plugins do not run: runonce).
func (a *Agent) podPlugins() (*volumemanager.Manager, *dra.Manager) {
	if a.plugins == nil {
		return nil, nil
	}
	return a.plugins.volumes, a.plugins.dra
}
