package oomwatch

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// Config is what the OOM kill stream of one agent needs: the node, the
// kernel events' settings, where its metrics and events go, and the pod
// side's state it attributes kills with (handed in by the agent).
type Config struct {
	// NodeName names the node of SystemOOM events.
	NodeName string
	// Layout names kubepods and the pod cgroups (the cgroup driver and
	// kubelet's cgroupRoot).
	Layout cgroups.Layout
	// BPFOff forces eBPF off: the stream runs on its fallbacks
	// (memory.events, oom_control, kmsg).
	BPFOff bool
	// Kills is kernelet_oom_kills_total (NewKillsCounter), Stalls
	// kernelet_pod_reclaim_stall_seconds_total (NewReclaimStallCounter)
	// and BPF the eBPF programs' run statistics, each registered by
	// whoever serves them; the stream's kernel events env is added to BPF.
	Kills  *prometheus.CounterVec
	Stalls *prometheus.CounterVec
	BPF    *bpf.Collector
	// Recorder records the OOMKilling and SystemOOM events.
	Recorder record.EventRecorder
	// Runtime resolves the cgroups the pod side does not know yet
	// (runtime.CgroupResolver).
	Runtime internalapi.RuntimeService

	// Pods are the pod workers' pods (nil: none).
	Pods PodsFunc
	// PodStatus is the runtime's last view of a pod (the PLEG cache).
	PodStatus PodStatusFunc
	// Wake wakes the eviction manager, naming why (eviction.WakeOOMKill,
	// eviction.WakeReclaimStall); nil: none runs.
	Wake func(eviction.WakeSource)
	// Hub gets every attributed kill for the live dashboard, OOMs counts
	// the pods' (nil: no dashboard).
	Hub  *live.Hub
	OOMs *live.OOMTracker
	// Streaming is called once the kernel's stream runs, before its first
	// kill is handled (optional).
	Streaming func()
}

// PodsFunc lists the pod workers' pods.
type PodsFunc func() []*v1.Pod

// PodStatusFunc is the runtime's last view of a pod (nil: none).
type PodStatusFunc func(uid types.UID) *runtime.PodStatus
