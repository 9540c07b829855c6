package agent

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/internal/kubeversion"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/eviction"
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
	hb, closeIdle, err := node.HeartbeatClient(a.clients.Config, &a.opts.Config.Kubelet)
	if err != nil {
		return nil, err
	}
	in := &nodeInputs{a: a}
	return node.New(node.Config{
		NodeName:                   a.opts.NodeName,
		Kubelet:                    &a.opts.Config.Kubelet,
		Thresholds:                 a.opts.Config.Thresholds,
		NodeLabels:                 a.opts.NodeLabels,
		Machine:                    m,
		KubeletVersion:             kv,
		Client:                     a.clients.Main,
		HeartbeatClient:            hb,
		OnRepeatedHeartbeatFailure: closeIdle,
		Recorder:                   a.recorder,
		Inputs:                     in.gather,
	})
}

// nodeInputs gathers what the node status says: the runtime's state
// (asked every runtimeStatePeriod; a failed ask keeps the last answer,
// so the node goes NotReady only once the runtime stays silent), the
// failing health checks, the node's addresses (looked up again every
// time) and the runtime's images.
type nodeInputs struct {
	a *Agent

	mu    sync.Mutex
	state node.RuntimeState
	asked time.Time
}

func (n *nodeInputs) gather(ctx context.Context) node.Inputs {
	ctx, cancel := context.WithTimeout(ctx, nodeStatusTimeout)
	defer cancel()
	a := n.a
	a.mu.Lock()
	rt, p := a.rt, a.pods
	a.mu.Unlock()
	in := node.Inputs{Runtime: n.runtime(ctx, rt)}
	if err := a.plegHealthy(); err != nil {
		in.HealthErrors = append(in.HealthErrors, err)
	}
	ips, _ := nodeip.Detect(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil {
			in.NodeIPs = append(in.NodeIPs, ip)
		}
	}
	if p != nil && p.evictions != nil {
		if a.opts.Config.Kernelet.PSINodeCondition {
			psi := false
			in.PSIPressure = &psi
		}
		for _, c := range p.evictions.Conditions() {
			switch c {
			case v1.NodeMemoryPressure:
				in.MemoryPressure = true
			case v1.NodeDiskPressure:
				in.DiskPressure = true
			case v1.NodePIDPressure:
				in.PIDPressure = true
			case eviction.ConditionPSIPressure:
				if in.PSIPressure != nil {
					*in.PSIPressure = true
				}
			}
		}
	}
	if p != nil && p.images != nil {
		if imgs, err := p.images.ListImages(ctx, &runtimeapi.ImageFilter{}); err == nil {
			in.Images = node.ImagesFromCRI(imgs)
		}
	}
	return in
}

// runtime is the runtime's state, asked again when the last answer is
// older than runtimeStatePeriod (or there is none yet).
func (n *nodeInputs) runtime(ctx context.Context, rt Runtime) node.RuntimeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.a.deps.Now()
	rs, ok := rt.(runtimeServicer)
	if !ok || (!n.state.LastSync.IsZero() && now.Sub(n.asked) < runtimeStatePeriod) {
		return n.state
	}
	n.asked = now
	if st, ok := askRuntime(ctx, rs.Service(), now); ok {
		n.state = st
	}
	return n.state
}

func askRuntime(ctx context.Context, rs internalapi.RuntimeService, now time.Time) (node.RuntimeState, bool) {
	v, err := rs.Version(ctx, "v1")
	if err != nil {
		return node.RuntimeState{}, false
	}
	st, err := rs.Status(ctx, false)
	if err != nil {
		return node.RuntimeState{}, false
	}
	return node.RuntimeStateFromCRI(v, st, now), true
}
