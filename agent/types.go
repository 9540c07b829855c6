package agent

import (
	"context"
	"fmt"
	"net"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/agent/gctune"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtimeconn"
	"github.com/kernelet/kernelet/agent/sources"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/clientset"
	"github.com/kernelet/kernelet/status/node"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// Options are the settings of one agent: the validated configuration plus
// what only flags carry.
type Options struct {
	Config *config.Config
	// NodeName is the node's name (hostname, or --hostname-override).
	NodeName string
	// RootDir holds the agent's state (--root-dir).
	RootDir string
	// Kubeconfig is the API server credential file (--kubeconfig); "" runs standalone.
	Kubeconfig string
	// CertDir holds the rotated client and serving certificates
	// (--cert-dir; "" is <RootDir>/pki).
	CertDir string
	// NodeIPs are the node's addresses (--node-ip, see nodeip.Parse); nil
	// detects them (nodeip.Detect).
	NodeIPs []net.IP
	// NodeLabels are added to the Node at registration (--node-labels).
	NodeLabels map[string]string
	// ContainerGC is the container GC policy (kubelet's flags
	// --minimum-container-ttl-duration, --maximum-dead-containers-per-container,
	// --maximum-dead-containers); nil means gc.DefaultContainerPolicy.
	ContainerGC *gc.ContainerPolicy
	// ContainerGCPeriod and ImageGCPeriod are how often the collectors run;
	// 0 means kubelet's 1 min and 5 min.
	ContainerGCPeriod, ImageGCPeriod time.Duration
	// BPFOff forces eBPF off (--bpf=off): the OOM stream runs on its
	// fallbacks (memory.events, oom_control, kmsg) and cgroup ids are
	// resolved by walking the hierarchy.
	BPFOff bool
}

// Deps are the agent's edges, replaceable in tests.
type Deps struct {
	// ConnectRuntime dials the CRI runtime; defaults to runtime.Connect.
	ConnectRuntime func(ctx context.Context, endpoint string, timeout time.Duration) (Runtime, error)
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
	// ConnectImages dials the CRI image service; defaults to cri-client's.
	ConnectImages func(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.ImageManagerService, error)
	// Cgroups discovers the cgroup hierarchies; defaults to
	// cgroups.Discover.
	Cgroups func() (*cgroups.Hierarchies, error)
	// PLEGPeriod and PLEGThreshold are the relist period and the health
	// threshold; 0 means kubelet's 1 s and 3 min.
	PLEGPeriod, PLEGThreshold time.Duration
	// EvictionTick overrides the eviction manager's fallback decision
	// period between kernel notifications (tests); 0 keeps the
	// KerneletConfiguration's evictionTick.
	EvictionTick time.Duration
	// HousekeepingPeriod is how often pods no source wants are looked
	// for; 0 means 2 s.
	HousekeepingPeriod time.Duration
	// AdmitHandlers run after the built-in admission (resources, runtime
	// support) before a pod's first sync.
	AdmitHandlers []podworkers.AdmitHandler
	// NodeIPSources find the node's addresses when none are given;
	// defaults to nodeip.DefaultSources.
	NodeIPSources nodeip.Sources
	// KubeClient reaches the API server for the kubelet API's TokenReview
	// and SubjectAccessReview; nil in standalone mode, where the webhook
	// authentication and authorization modes refuse to start.
	KubeClient clientset.Interface
	// GCTuner, when set, sets the garbage collector's target by the pod
	// churn (the CRI's mutating operations); nil leaves it alone (an
	// operator's $GOGC).
	GCTuner *gctune.Tuner
}

// Runtime is what the agent needs from the CRI runtime today.
type Runtime = runtimeconn.Runtime

// Status is what /status serves and `kernelet status` prints.
type Status struct {
	Version    string        `json:"version"`
	Revision   string        `json:"revision,omitempty"`
	NodeName   string        `json:"nodeName"`
	StartTime  time.Time     `json:"startTime"`
	ConfigFile string        `json:"configFile,omitempty"`
	Mode       string        `json:"mode"` // "standalone" or "api-server"
	Runtime    RuntimeStatus `json:"runtime"`
	Thresholds []string      `json:"evictionThresholds,omitempty"`
	Endpoints  []string      `json:"endpoints,omitempty"`
	// Pods is the number of pods the agent knows (-1: the pod lifecycle
	// is not running).
	Pods int `json:"pods"`
	// PodsError is why the pod lifecycle does not run.
	PodsError string `json:"podsError,omitempty"`
	// SourceProblems are the pod sources' current problems.
	SourceProblems []SourceProblem `json:"sourceProblems,omitempty"`
	// Eviction is the eviction manager's state (nil: the pod lifecycle
	// does not run).
	Eviction *eviction.Status `json:"eviction,omitempty"`
	// OOM is the OOM kill stream and its recent kills (nil: the pod
	// lifecycle does not run).
	OOM *OOMStatus `json:"oom,omitempty"`
	// Cluster is the API server side (nil: standalone).
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// OOMStatus is the OOM kill stream and its recent kills as /status
// serves them (agent/oomwatch).
type OOMStatus = oomwatch.Status

// OOMKillRecord is one recent OOM kill as /status serves it.
type OOMKillRecord = oomwatch.KillRecord

// ClusterStatus is how the agent's reporting to the API server goes.
type ClusterStatus struct {
	// APIServer is the API server's URL.
	APIServer string `json:"apiServer"`
	// Node is the Node registration, status and Lease.
	Node node.Status `json:"node"`
	// Pods is the pod statuses, mirror pods and deletions.
	Pods statuspods.Status `json:"pods"`
}

// SourceProblem is a pod source's problem as /status serves it.
type SourceProblem struct {
	Source string    `json:"source"`
	File   string    `json:"file"`
	Doc    int       `json:"doc,omitempty"`
	Error  string    `json:"error"`
	Time   time.Time `json:"time"`
}

func sourceProblem(p sources.Problem) SourceProblem {
	sp := SourceProblem{Source: p.Source, File: p.File, Doc: p.Doc, Time: p.Time}
	if p.Err != nil {
		sp.Error = p.Err.Error()
	}
	return sp
}

func (p SourceProblem) String() string {
	loc := p.File
	if p.Doc > 0 {
		loc = fmt.Sprintf("%s: document %d", p.File, p.Doc)
	}
	return fmt.Sprintf("%s source: %s: %s", p.Source, loc, p.Error)
}

// RuntimeStatus is the CRI runtime as the agent sees it.
type RuntimeStatus struct {
	Connected bool          `json:"connected"`
	Error     string        `json:"error,omitempty"`
	Info      *runtime.Info `json:"info,omitempty"`
}
