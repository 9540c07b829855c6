package podworkers

// Node admission: the checks kubelet makes before a pod's first sync besides
// resource fit (admit.go). They mirror Kubernetes 1.37 kubelet — the
// sysctl allowlist (pkg/kubelet/sysctl) and the predicate admit handler
// (pkg/kubelet/lifecycle/predicate.go), which reuses the scheduler's
// NodeAffinity, NodeName, NodePorts and TaintToleration filters — with the
// same reasons and messages, so that what a user reads in the Failed pod's
// status is what kubelet would have written.
//
// Order. Kubelet runs its handlers in this order and the first rejection
// wins; the agent should register kernelet's handlers the same way:
//
//  1. eviction (node pressure: reason Evicted),
//  2. Sysctls (SysctlForbidden),
//  3. the predicate handler, itself in this order: PodOS (the
//     kubernetes.io/os pod label, then spec.os), then resource fit
//     (ResourceFit: OutOfpods / OutOfcpu / OutOfmemory), NodeAffinity,
//     NodeName, NodePorts, Taints (TaintToleration),
//  4. the rest (AppArmor, pod features, node shutdown); kernelet's
//     Validate (UnexpectedAdmissionError) comes here.
//
// Within the predicate handler kubelet evaluates every filter and reports
// the first failure in the order above, which is what running these
// handlers one after the other gives. What kernelet does not do: a
// critical pod rejected for resources does not preempt other pods, and a
// NodeAffinity failure does not refetch the node from the API server
// before rejecting (the node func must return the freshest node known).

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/util/sysctl"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// Messages of the admission rejections, kubelet's texts (Kubernetes ≥ 1.31
// appends the scheduler plugin's description to "Predicate X failed").
const (
	MessagePodOSSelectorNodeLabelDoesNotMatch = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	MessagePodOSNotSupported                  = "Failed to admit pod as the OS field doesn't match node OS"
	MessageNodeAffinity                       = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	MessageNodeName                           = "Predicate NodeName failed: node(s) didn't match the requested node name"
	MessageNodePorts                          = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	MessageTaintToleration                    = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
)

// PodOS mirrors kubelet's two OS checks, made before any other predicate.
// goos is the node's operating system (runtime.GOOS; kubelet always
// compares with it, since it forces the node's kubernetes.io/os label to
// runtime.GOOS before comparing).
//
//   - A pod *label* kubernetes.io/os other than goos rejects the pod with
//     PodOSSelectorNodeLabelDoesNotMatch. Kubelet looks at metadata.labels,
//     not at spec.nodeSelector, despite the reason's name: a nodeSelector
//     kubernetes.io/os that the node's labels do not satisfy is rejected by
//     NodeAffinity instead.
//   - spec.os.name set and other than goos rejects the pod with
//     PodOSNotSupported.
func PodOS(goos string) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		if os, ok := a.Pod.Labels[v1.LabelOSStable]; ok && os != goos {
			return AdmitResult{Reason: ReasonPodOSSelectorNodeLabelDoesNotMatch, Message: MessagePodOSSelectorNodeLabelDoesNotMatch}
		}
		if a.Pod.Spec.OS != nil && string(a.Pod.Spec.OS.Name) != goos {
			return AdmitResult{Reason: ReasonPodOSNotSupported, Message: MessagePodOSNotSupported}
		}
		return AdmitResult{Admit: true}
	})
}

// NodeAffinity mirrors kubelet's NodeAffinity predicate: the pod's
// spec.nodeSelector and its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: the terms are ORed, the
// expressions of a term ANDed; matchExpressions on the node's labels,
// matchFields on metadata.name) must match the node, else reason
// NodeAffinity. Matching is the scheduler's own library
// (k8s.io/component-helpers nodeaffinity); a selector that does not parse
// does not match, as in kubelet.
//
// node returns the node object as last seen (labels included). nil means
// the node is not known yet (not registered, or no API server): the pod is
// admitted. Kubelet instead matches against the initial node it builds
// from local information (hostname, os and arch labels, --node-labels);
// an agent that wants that behaviour returns such a node instead of nil.
func NodeAffinity(node func() *v1.Node) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		n := node()
		if n == nil {
			return AdmitResult{Admit: true}
		}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(a.Pod).Match(n); !ok {
			return AdmitResult{Reason: ReasonNodeAffinity, Message: MessageNodeAffinity}
		}
		return AdmitResult{Admit: true}
	})
}

// NodeName mirrors kubelet's NodeName predicate: a pod whose spec.nodeName
// is set and is not the node's name is rejected with reason NodeName. A
// nil node (not known yet) admits, as in NodeAffinity.
func NodeName(node func() *v1.Node) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		n := node()
		if n == nil || a.Pod.Spec.NodeName == "" || a.Pod.Spec.NodeName == n.Name {
			return AdmitResult{Admit: true}
		}
		return AdmitResult{Reason: ReasonNodeName, Message: MessageNodeName}
	})
}

// Taints mirrors kubelet's taint check: a pod that does not tolerate one
// of the node's NoExecute taints is rejected with reason TaintToleration.
// NoSchedule and PreferNoSchedule taints are the scheduler's business and
// are not checked, nor are static pods (a kubernetes.io/config.source
// annotation other than "api"). Toleration matching is the scheduler's
// library (k8s.io/component-helpers); the alpha comparison operators
// (Gt/Lt, feature TaintTolerationComparisonOperators, off by default) are
// not enabled. A nil node admits.
func Taints(node func() *v1.Node) AdmitHandler {
	noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		n := node()
		if n == nil || podutil.IsStatic(a.Pod) {
			return AdmitResult{Admit: true}
		}
		if _, untolerated := corev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints,
			a.Pod.Spec.Tolerations, noExecute, false); untolerated {
			return AdmitResult{Reason: ReasonTaintToleration, Message: MessageTaintToleration}
		}
		return AdmitResult{Admit: true}
	})
}

// NodePorts mirrors kubelet's NodePorts predicate: a host port the pod
// asks for that one of the other admitted pods already holds rejects the
// pod with reason NodePorts. The ports counted, for the pod and for the
// others, are the hostPorts (> 0) of the regular containers and of the
// sidecar init containers (restartPolicy Always): a regular init
// container's ports are not held while the pod runs. An empty hostIP means
// 0.0.0.0 and an empty protocol TCP; two ports conflict when protocol and
// port are equal and either hostIP is 0.0.0.0 or both are the same (as in
// the scheduler, "::" is just another address). Ports repeated within the
// pod itself are not checked.
func NodePorts() AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		want := hostPorts(a.Pod)
		if len(want) == 0 {
			return AdmitResult{Admit: true}
		}
		used := map[hostPort]bool{}
		for _, p := range a.OtherPods {
			for _, hp := range hostPorts(p) {
				used[hp] = true
			}
		}
		for _, hp := range want {
			if used[hp] || used[hostPort{ip: bindAll, protocol: hp.protocol, port: hp.port}] {
				return AdmitResult{Reason: ReasonNodePorts, Message: MessageNodePorts}
			}
			if hp.ip == bindAll {
				for u := range used {
					if u.protocol == hp.protocol && u.port == hp.port {
						return AdmitResult{Reason: ReasonNodePorts, Message: MessageNodePorts}
					}
				}
			}
		}
		return AdmitResult{Admit: true}
	})
}

const bindAll = "0.0.0.0"

// hostPort is one (hostIP, protocol, port) a pod holds on the node.
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts lists the host ports a running pod holds, defaults applied.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = bindAll
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// SafeSysctls returns kubelet's safe sysctls (Kubernetes 1.37), allowed
// without --allowed-unsafe-sysctls. Kubernetes 1.33 has the first twelve;
// net.ipv4.tcp_slow_start_after_idle and net.ipv4.tcp_notsent_lowat came
// later. Kubelet drops those needing a newer kernel than the node's
// (ip_local_reserved_ports 3.16; tcp_keepalive_* 4.5; tcp_fin_timeout and
// tcp_notsent_lowat 4.6; tcp_rmem, tcp_wmem, tcp_slow_start_after_idle
// 4.15); kernelet does not: every kernel it supports is newer.
func SafeSysctls() []string {
	return []string{
		"kernel.shm_rmid_forced",
		"net.ipv4.ip_local_port_range",
		"net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range",
		"net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes",
		"net.ipv4.tcp_rmem",
		"net.ipv4.tcp_wmem",
		"net.ipv4.tcp_slow_start_after_idle",
		"net.ipv4.tcp_notsent_lowat",
	}
}

// sysctlPatternRE is the API's syntax of a sysctl pattern: dot- or
// slash-separated segments, the last one possibly ending in '*'.
var sysctlPatternRE = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

const sysctlMaxLength = 253

// sysctlRule is one allowlist entry: a sysctl, or a prefix when the
// pattern ended in '*', with the kernel namespace it belongs to.
type sysctlRule struct {
	name   string
	ns     sysctl.Namespace
	prefix bool
}

// Sysctls mirrors kubelet's sysctl admit handler. The allowlist is
// SafeSysctls plus allowedUnsafe (kubelet's allowedUnsafeSysctls: names,
// or patterns ending in '*' such as "kernel.msg*"). Every pattern must be
// a valid sysctl pattern of a sysctl known to be namespaced (IPC: kernel.sem,
// kernel.shm*, kernel.msg*, fs.mqueue.*; Net: net.*; UTS:
// kernel.domainname; User: user.*), else Sysctls returns an error, as
// kubelet then refuses to start.
//
// A pod is rejected with reason SysctlForbidden and the message
// `forbidden sysctl: "<name>" not allowlisted` for the first sysctl of
// spec.securityContext.sysctls on no entry, or `forbidden sysctl: "<name>"
// not allowed with host <Net|IPC|User> enabled` when it belongs to a
// namespace the pod shares with the host (hostNetwork, hostIPC, hostUsers
// unset or true). Names are compared in their dotted form
// ("net/ipv4/conf/eth0.100/rp_filter" is "net.ipv4.conf.eth0/100.rp_filter").
// The hostUsers rule is Kubernetes 1.37's; 1.33 has only Net and IPC.
func Sysctls(allowedUnsafe []string) (AdmitHandler, error) {
	var rules []sysctlRule
	for _, p := range append(SafeSysctls(), allowedUnsafe...) {
		if len(p) > sysctlMaxLength || !sysctlPatternRE.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s",
				p, sysctlMaxLength, strings.Trim(sysctlPatternRE.String(), "^$"))
		}
		ns, name, prefix := sysctl.GetNamespace(p)
		if ns == sysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
		}
		rules = append(rules, sysctlRule{name: name, ns: ns, prefix: prefix})
	}
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		sc := a.Pod.Spec.SecurityContext
		if sc == nil {
			return AdmitResult{Admit: true}
		}
		hostUsers := a.Pod.Spec.HostUsers == nil || *a.Pod.Spec.HostUsers
		for _, s := range sc.Sysctls {
			if err := checkSysctl(rules, sysctl.NormalizeName(s.Name), a.Pod.Spec.HostNetwork, a.Pod.Spec.HostIPC, hostUsers); err != "" {
				return AdmitResult{Reason: ReasonSysctlForbidden, Message: "forbidden sysctl: " + err}
			}
		}
		return AdmitResult{Admit: true}
	}), nil
}

// checkSysctl returns why name is forbidden, or "". Exact entries are
// looked at before prefixes, as in kubelet.
func checkSysctl(rules []sysctlRule, name string, hostNet, hostIPC, hostUsers bool) string {
	shared := func(ns sysctl.Namespace) string {
		if ns == sysctl.NetNamespace && hostNet || ns == sysctl.IPCNamespace && hostIPC ||
			ns == sysctl.UserNamespace && hostUsers {
			return fmt.Sprintf("%q not allowed with host %s enabled", name, ns)
		}
		return ""
	}
	for _, r := range rules {
		if !r.prefix && r.name == name {
			return shared(r.ns)
		}
	}
	for _, r := range rules {
		if r.prefix && strings.HasPrefix(name, r.name) {
			return shared(r.ns)
		}
	}
	return fmt.Sprintf("%q not allowlisted", name)
}
