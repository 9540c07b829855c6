package agent

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/internal/kubeversion"
	"github.com/kernelet/kernelet/status/node"
)

// The node status inputs' timings.
const (
	// nodeStatusTimeout bounds the runtime calls of one node status
	// computation.
	nodeStatusTimeout = 5 * time.Second
	// runtimeStatePeriod is how often the runtime's version and status
	// are asked for; between two asks the last answer stands.
	runtimeStatePeriod = 5 * time.Second
)

// newNodeController builds the controller that registers this node and
// reports its status and Lease.
func (a *Agent) newNodeController() (*node.Controller, error) {
	m, err := node.ReadMachine(node.MachineFiles{RootDir: a.opts.RootDir})
	if err != nil {
		return nil, err
	}
	kv, err := node.KubeletVersion(kubeversion.Get(), Version)
	if err != nil {
		return nil, err
	}
	declared, err := config.DeclaredFeatures(&a.opts.Config.Kubelet, kubeversion.Get())
	if err != nil {
		return nil, err
	}
	hb, closeIdle, err := node.HeartbeatClient(a.clients.Config, &a.opts.Config.Kubelet)
	if err != nil {
		return nil, err
	}
	in := &nodeInputs{a: a, runtime: node.RuntimeStates{Period: runtimeStatePeriod, Now: a.deps.Now}}
	return node.New(node.Config{
		NodeName:                   a.opts.NodeName,
		Kubelet:                    &a.opts.Config.Kubelet,
		Thresholds:                 a.opts.Config.Thresholds,
		NodeLabels:                 a.opts.NodeLabels,
		Machine:                    m,
		KubeletVersion:             kv,
		DeclaredFeatures:           declared,
		Client:                     a.clients.Main,
		HeartbeatClient:            hb,
		OnRepeatedHeartbeatFailure: closeIdle,
		Recorder:                   a.recorder,
		Inputs:                     in.gather,
	})
}

// nodeInputs gathers what the node status says: the runtime's state
// (node.RuntimeStates: asked every runtimeStatePeriod, a failed ask
// keeping the last answer), the failing health checks, the node's
// addresses (looked up again every time), the eviction manager's
// pressure and the runtime's images.
type nodeInputs struct {
	a       *Agent
	runtime node.RuntimeStates
}

func (n *nodeInputs) gather(ctx context.Context) node.Inputs {
	ctx, cancel := context.WithTimeout(ctx, nodeStatusTimeout)
	defer cancel()
	a := n.a
	p := a.currentPods()
	in := node.Inputs{Runtime: n.runtime.Get(ctx, a.runtimeService())}
	if err := a.plegHealthy(); err != nil {
		in.HealthErrors = append(in.HealthErrors, err)
	}
	ips, _ := nodeip.Detect(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	in.NodeIPs = nodeip.IPs(ips)
	if p != nil && p.evictions != nil {
		in.SetPressure(p.evictions.Conditions(), a.opts.Config.Kernelet.PSINodeCondition)
	}
	if p != nil && p.pressure != nil {
		in.Contention = p.pressure.Contention(ctx, a.opts.Config.Contention)
	}
	if p != nil && p.devices != nil {
		in.DeviceCapacity, in.DeviceAllocatable = p.devices.Capacity()
	}
	if p != nil && p.images != nil {
		if imgs, err := p.images.ListImages(ctx, &runtimeapi.ImageFilter{}); err == nil {
			in.Images = node.ImagesFromCRI(imgs)
		}
	}
	a.mu.Lock()
	plugins := a.plugins
	a.mu.Unlock()
	if plugins != nil {
		in.VolumesInUse = plugins.volumes.VolumesInUse()
	}
	return in
}
