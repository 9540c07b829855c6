package agent

import (
	"context"
	"net"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/status/node"
)

// KubernetesVersion is the Kubernetes release whose kubelet kernelet
// stands in for (the k8s.io modules it is built with): the base of the
// Node's kubeletVersion, which tools and e2e suites parse as a semver.
const KubernetesVersion = "v1.37.2"

// nodeStatusTimeout bounds the runtime calls of one node status
// computation.
const nodeStatusTimeout = 5 * time.Second

// newNodeController builds the controller that registers this node and
// reports its status and Lease.
func (a *Agent) newNodeController() (*node.Controller, error) {
	m, err := node.ReadMachine(node.MachineFiles{RootDir: a.opts.RootDir})
	if err != nil {
		return nil, err
	}
	kv, err := node.KubeletVersion(KubernetesVersion, Version)
	if err != nil {
		return nil, err
	}
	return node.New(node.Config{
		NodeName:        a.opts.NodeName,
		Kubelet:         &a.opts.Config.Kubelet,
		Thresholds:      a.opts.Config.Thresholds,
		NodeLabels:      a.opts.NodeLabels,
		Machine:         m,
		KubeletVersion:  kv,
		Client:          a.clients.Main,
		HeartbeatClient: a.clients.Heartbeat,
		Recorder:        a.recorder,
		Inputs:          a.nodeInputs,
	})
}

// nodeInputs gathers what the node status says: the runtime's version
// and conditions, the failing health checks, the node's addresses (looked
// up again every time) and the runtime's images.
func (a *Agent) nodeInputs(ctx context.Context) node.Inputs {
	ctx, cancel := context.WithTimeout(ctx, nodeStatusTimeout)
	defer cancel()
	var in node.Inputs
	a.mu.Lock()
	rt, p := a.rt, a.pods
	a.mu.Unlock()
	if rs, ok := rt.(runtimeServicer); ok {
		in.Runtime = runtimeState(ctx, rs.Service(), a.deps.Now)
	}
	if err := a.plegHealthy(); err != nil {
		in.HealthErrors = append(in.HealthErrors, err)
	}
	ips, _ := NodeIPs(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil {
			in.NodeIPs = append(in.NodeIPs, ip)
		}
	}
	if p != nil && p.images != nil {
		in.Images = listImages(ctx, p.images)
	}
	return in
}

// runtimeState asks the runtime for its version and status; LastSync is
// zero when it did not answer.
func runtimeState(ctx context.Context, rs internalapi.RuntimeService, now func() time.Time) node.RuntimeState {
	var st node.RuntimeState
	v, err := rs.Version(ctx, "v1")
	if err != nil {
		return st
	}
	st.Name, st.Version = v.GetRuntimeName(), v.GetRuntimeVersion()
	resp, err := rs.Status(ctx, false)
	if err != nil {
		return st
	}
	st.LastSync = now()
	for _, c := range resp.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, node.RuntimeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return st
}

func listImages(ctx context.Context, is internalapi.ImageManagerService) []node.Image {
	imgs, err := is.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		return nil
	}
	out := make([]node.Image, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, node.Image{RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, SizeBytes: i.Size})
	}
	return out
}
