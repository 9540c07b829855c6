package podworkers

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// admitted is the result of an admitted pod.
var admitted = AdmitResult{Admit: true}

func checkResult(t *testing.T, name string, got, want AdmitResult) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %+v, want %+v", name, got, want)
	}
}

func podWith(mutate func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPodOS(t *testing.T) {
	selectorMismatch := AdmitResult{Reason: "PodOSSelectorNodeLabelDoesNotMatch",
		Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	notSupported := AdmitResult{Reason: "PodOSNotSupported", Message: "Failed to admit pod as the OS field doesn't match node OS"}
	for name, tc := range map[string]struct {
		pod  *v1.Pod
		want AdmitResult
	}{
		"no os field or label": {podWith(nil), admitted},
		"os field linux":       {podWith(func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Linux} }), admitted},
		"os field windows":     {podWith(func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }), notSupported},
		"os label linux":       {podWith(func(p *v1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": "linux"} }), admitted},
		"os label windows":     {podWith(func(p *v1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": "windows"} }), selectorMismatch},
		"os label empty":       {podWith(func(p *v1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": ""} }), selectorMismatch},
		"label checked before field": {podWith(func(p *v1.Pod) {
			p.Labels = map[string]string{"kubernetes.io/os": "windows"}
			p.Spec.OS = &v1.PodOS{Name: v1.Windows}
		}), selectorMismatch},
		// kubelet reads the pod's labels, not its nodeSelector: a nodeSelector
		// mismatch is NodeAffinity's (see TestNodeAffinity).
		"nodeSelector os windows is not this check": {podWith(func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"}
		}), admitted},
	} {
		checkResult(t, name, PodOS("linux").Admit(AdmitAttributes{Pod: tc.pod}), tc.want)
	}
}

func nodeFunc(n *v1.Node) func() *v1.Node { return func() *v1.Node { return n } }

func affinity(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func TestNodeAffinity(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
		"kubernetes.io/os": "linux", "kubernetes.io/hostname": "node-a", "disk": "ssd", "cores": "8"}}}
	reject := AdmitResult{Reason: "NodeAffinity",
		Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}
	withSelector := func(sel map[string]string) *v1.Pod {
		return podWith(func(p *v1.Pod) { p.Spec.NodeSelector = sel })
	}
	withAffinity := func(a *v1.Affinity) *v1.Pod { return podWith(func(p *v1.Pod) { p.Spec.Affinity = a }) }
	for name, tc := range map[string]struct {
		node *v1.Node
		pod  *v1.Pod
		want AdmitResult
	}{
		"nothing asked":                {node, podWith(nil), admitted},
		"node not known yet":           {nil, withSelector(map[string]string{"disk": "hdd"}), admitted},
		"nodeSelector matches":         {node, withSelector(map[string]string{"disk": "ssd", "kubernetes.io/os": "linux"}), admitted},
		"nodeSelector value differs":   {node, withSelector(map[string]string{"disk": "hdd"}), reject},
		"nodeSelector os differs":      {node, withSelector(map[string]string{"kubernetes.io/os": "windows"}), reject},
		"nodeSelector label missing":   {node, withSelector(map[string]string{"gpu": "yes"}), reject},
		"In matches":                   {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpIn, "hdd", "ssd"))), admitted},
		"In does not match":            {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpIn, "hdd"))), reject},
		"NotIn matches":                {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpNotIn, "hdd"))), admitted},
		"NotIn does not match":         {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpNotIn, "ssd"))), reject},
		"NotIn on a missing label":     {node, withAffinity(affinity(expr("gpu", v1.NodeSelectorOpNotIn, "yes"))), admitted},
		"Exists matches":               {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpExists))), admitted},
		"Exists does not match":        {node, withAffinity(affinity(expr("gpu", v1.NodeSelectorOpExists))), reject},
		"DoesNotExist matches":         {node, withAffinity(affinity(expr("gpu", v1.NodeSelectorOpDoesNotExist))), admitted},
		"DoesNotExist does not match":  {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpDoesNotExist))), reject},
		"Gt matches":                   {node, withAffinity(affinity(expr("cores", v1.NodeSelectorOpGt, "4"))), admitted},
		"Gt does not match":            {node, withAffinity(affinity(expr("cores", v1.NodeSelectorOpGt, "8"))), reject},
		"Lt matches":                   {node, withAffinity(affinity(expr("cores", v1.NodeSelectorOpLt, "16"))), admitted},
		"Lt does not match":            {node, withAffinity(affinity(expr("cores", v1.NodeSelectorOpLt, "8"))), reject},
		"Gt on a non-integer label":    {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpGt, "1"))), reject},
		"invalid operator never match": {node, withAffinity(affinity(expr("disk", "Like", "ssd"))), reject},
		"terms are ORed": {node, withAffinity(affinity(expr("disk", v1.NodeSelectorOpIn, "hdd"),
			expr("cores", v1.NodeSelectorOpIn, "8"))), admitted},
		"expressions of a term are ANDed": {node, withAffinity(affinity(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}},
			{Key: "cores", Operator: v1.NodeSelectorOpIn, Values: []string{"4"}}}})), reject},
		"matchFields name matches": {node, withAffinity(affinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-a"}}}})), admitted},
		"matchFields name differs": {node, withAffinity(affinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-b"}}}})), reject},
		"empty term matches nothing": {node, withAffinity(affinity(v1.NodeSelectorTerm{})), reject},
		"no required terms":          {node, withAffinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}), admitted},
		"selector and affinity both must match": {node, podWith(func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
			p.Spec.Affinity = affinity(expr("disk", v1.NodeSelectorOpExists))
		}), reject},
	} {
		checkResult(t, name, NodeAffinity(nodeFunc(tc.node)).Admit(AdmitAttributes{Pod: tc.pod}), tc.want)
	}
}

func TestNodeName(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	reject := AdmitResult{Reason: "NodeName", Message: "Predicate NodeName failed: node(s) didn't match the requested node name"}
	for name, tc := range map[string]struct {
		node     *v1.Node
		nodeName string
		want     AdmitResult
	}{
		"no nodeName":        {node, "", admitted},
		"this node":          {node, "node-a", admitted},
		"another node":       {node, "node-b", reject},
		"node not known yet": {nil, "node-b", admitted},
	} {
		pod := podWith(func(p *v1.Pod) { p.Spec.NodeName = tc.nodeName })
		checkResult(t, name, NodeName(nodeFunc(tc.node)).Admit(AdmitAttributes{Pod: pod}), tc.want)
	}
}

func TestTaints(t *testing.T) {
	taint := func(effect v1.TaintEffect) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
			Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "db", Effect: effect}}}}
	}
	reject := AdmitResult{Reason: "TaintToleration", Message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"}
	tolerating := func(tol ...v1.Toleration) *v1.Pod { return podWith(func(p *v1.Pod) { p.Spec.Tolerations = tol }) }
	for name, tc := range map[string]struct {
		node *v1.Node
		pod  *v1.Pod
		want AdmitResult
	}{
		"no taints":                    {&v1.Node{}, podWith(nil), admitted},
		"node not known yet":           {nil, podWith(nil), admitted},
		"NoExecute not tolerated":      {taint(v1.TaintEffectNoExecute), podWith(nil), reject},
		"NoSchedule is not checked":    {taint(v1.TaintEffectNoSchedule), podWith(nil), admitted},
		"PreferNoSchedule not checked": {taint(v1.TaintEffectPreferNoSchedule), podWith(nil), admitted},
		"tolerated by Equal": {taint(v1.TaintEffectNoExecute), tolerating(v1.Toleration{Key: "dedicated",
			Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoExecute}), admitted},
		"Equal with another value": {taint(v1.TaintEffectNoExecute), tolerating(v1.Toleration{Key: "dedicated",
			Operator: v1.TolerationOpEqual, Value: "web", Effect: v1.TaintEffectNoExecute}), reject},
		"tolerated by Exists on the key": {taint(v1.TaintEffectNoExecute), tolerating(v1.Toleration{Key: "dedicated",
			Operator: v1.TolerationOpExists}), admitted},
		"tolerated by Exists on everything": {taint(v1.TaintEffectNoExecute), tolerating(v1.Toleration{Operator: v1.TolerationOpExists}), admitted},
		"toleration of another effect": {taint(v1.TaintEffectNoExecute), tolerating(v1.Toleration{Key: "dedicated",
			Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}), reject},
		"static pod is not checked": {taint(v1.TaintEffectNoExecute), podWith(func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		}), admitted},
		"api pod is checked": {taint(v1.TaintEffectNoExecute), podWith(func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "api"}
		}), reject},
	} {
		checkResult(t, name, Taints(nodeFunc(tc.node)).Admit(AdmitAttributes{Pod: tc.pod}), tc.want)
	}
}

// portPod is a pod holding the given ports in one container.
func portPod(name string, ports ...v1.ContainerPort) *v1.Pod {
	return podWith(func(p *v1.Pod) {
		p.Name, p.UID = name, types.UID("uid-"+name)
		p.Spec.Containers[0].Ports = ports
	})
}

func TestNodePorts(t *testing.T) {
	reject := AdmitResult{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
	tcp := func(ip string, port int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostIP: ip, HostPort: port, Protocol: v1.ProtocolTCP}
	}
	udp := func(ip string, port int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostIP: ip, HostPort: port, Protocol: v1.ProtocolUDP}
	}
	always := v1.ContainerRestartPolicyAlways
	for name, tc := range map[string]struct {
		pod    *v1.Pod
		others []*v1.Pod
		want   AdmitResult
	}{
		"no host port":              {portPod("new", v1.ContainerPort{ContainerPort: 80}), []*v1.Pod{portPod("old", tcp("", 8080))}, admitted},
		"free port":                 {portPod("new", tcp("", 8080)), []*v1.Pod{portPod("old", tcp("", 8081))}, admitted},
		"no other pod":              {portPod("new", tcp("", 8080)), nil, admitted},
		"same port":                 {portPod("new", tcp("", 8080)), []*v1.Pod{portPod("old", tcp("", 8080))}, reject},
		"other protocol":            {portPod("new", udp("", 8080)), []*v1.Pod{portPod("old", tcp("", 8080))}, admitted},
		"empty protocol is TCP":     {portPod("new", v1.ContainerPort{HostPort: 8080}), []*v1.Pod{portPod("old", tcp("", 8080))}, reject},
		"empty hostIP is 0.0.0.0":   {portPod("new", tcp("", 8080)), []*v1.Pod{portPod("old", tcp("0.0.0.0", 8080))}, reject},
		"different host IPs":        {portPod("new", tcp("10.0.0.1", 8080)), []*v1.Pod{portPod("old", tcp("10.0.0.2", 8080))}, admitted},
		"same host IP":              {portPod("new", tcp("10.0.0.1", 8080)), []*v1.Pod{portPod("old", tcp("10.0.0.1", 8080))}, reject},
		"wildcard wanted, IP taken": {portPod("new", tcp("", 8080)), []*v1.Pod{portPod("old", tcp("10.0.0.1", 8080))}, reject},
		"IP wanted, wildcard taken": {portPod("new", tcp("10.0.0.1", 8080)), []*v1.Pod{portPod("old", tcp("", 8080))}, reject},
		"ipv6 any is an address":    {portPod("new", tcp("::", 8080)), []*v1.Pod{portPod("old", tcp("10.0.0.1", 8080))}, admitted},
		"second port conflicts": {portPod("new", tcp("", 8080), udp("", 53)),
			[]*v1.Pod{portPod("a", tcp("", 9090)), portPod("b", udp("", 53))}, reject},
		"taken by a sidecar init container": {portPod("new", tcp("", 8080)), []*v1.Pod{podWith(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always, Ports: []v1.ContainerPort{tcp("", 8080)}}}
		})}, reject},
		"a regular init container holds nothing": {portPod("new", tcp("", 8080)), []*v1.Pod{podWith(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Ports: []v1.ContainerPort{tcp("", 8080)}}}
		})}, admitted},
		"wanted by a sidecar init container": {podWith(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always, Ports: []v1.ContainerPort{tcp("", 8080)}}}
		}), []*v1.Pod{portPod("old", tcp("", 8080))}, reject},
		"repeated within the pod": {portPod("new", tcp("", 8080), tcp("", 8080)), nil, admitted},
	} {
		checkResult(t, name, NodePorts().Admit(AdmitAttributes{Pod: tc.pod, OtherPods: tc.others}), tc.want)
	}
}

func TestSysctls(t *testing.T) {
	forbidden := func(msg string) AdmitResult { return AdmitResult{Reason: "SysctlForbidden", Message: msg} }
	withSysctls := func(mutate func(*v1.Pod), names ...string) *v1.Pod {
		return podWith(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{}
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
			}
			if mutate != nil {
				mutate(p)
			}
		})
	}
	hostNet := func(p *v1.Pod) { p.Spec.HostNetwork = true }
	hostIPC := func(p *v1.Pod) { p.Spec.HostIPC = true }
	ownUsers := func(p *v1.Pod) { f := false; p.Spec.HostUsers = &f }
	unsafe := []string{"kernel.msg*", "net.core.somaxconn", "kernel.sem", "user.max_*", "kernel.domainname", "fs.mqueue.*"}
	for name, tc := range map[string]struct {
		pod  *v1.Pod
		want AdmitResult
	}{
		"no security context": {podWith(nil), admitted},
		"no sysctls":          {withSysctls(nil), admitted},
		"safe sysctls": {withSysctls(nil, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
			"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
			"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
			"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
			"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"), admitted},
		"slash separators":       {withSysctls(nil, "net/ipv4/tcp_syncookies"), admitted},
		"unsafe not allowlisted": {withSysctls(nil, "net.ipv4.tcp_syncookies", "net.ipv4.tcp_max_syn_backlog"), forbidden(`forbidden sysctl: "net.ipv4.tcp_max_syn_backlog" not allowlisted`)},
		"slash name reported dotted": {withSysctls(nil, "net/ipv4/conf/eth0.100/rp_filter"),
			forbidden(`forbidden sysctl: "net.ipv4.conf.eth0/100.rp_filter" not allowlisted`)},
		"non-namespaced":               {withSysctls(nil, "vm.swappiness"), forbidden(`forbidden sysctl: "vm.swappiness" not allowlisted`)},
		"allowed unsafe exact":         {withSysctls(nil, "net.core.somaxconn"), admitted},
		"allowed unsafe pattern":       {withSysctls(nil, "kernel.msgmax", "kernel.msgmnb"), admitted},
		"pattern is a prefix only":     {withSysctls(nil, "kernel.shmmax"), forbidden(`forbidden sysctl: "kernel.shmmax" not allowlisted`)},
		"first forbidden one wins":     {withSysctls(nil, "kernel.sem", "a.b", "c.d"), forbidden(`forbidden sysctl: "a.b" not allowlisted`)},
		"net with hostNetwork":         {withSysctls(hostNet, "net.ipv4.tcp_syncookies"), forbidden(`forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`)},
		"unsafe net with hostNetwork":  {withSysctls(hostNet, "net.core.somaxconn"), forbidden(`forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`)},
		"ipc with hostNetwork":         {withSysctls(hostNet, "kernel.shm_rmid_forced"), admitted},
		"ipc with hostIPC":             {withSysctls(hostIPC, "kernel.shm_rmid_forced"), forbidden(`forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`)},
		"ipc pattern with hostIPC":     {withSysctls(hostIPC, "kernel.msgmax"), forbidden(`forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`)},
		"mqueue with hostIPC":          {withSysctls(hostIPC, "fs.mqueue.msg_max"), forbidden(`forbidden sysctl: "fs.mqueue.msg_max" not allowed with host IPC enabled`)},
		"net with hostIPC":             {withSysctls(hostIPC, "net.ipv4.tcp_syncookies"), admitted},
		"uts with host namespaces":     {withSysctls(func(p *v1.Pod) { hostNet(p); hostIPC(p) }, "kernel.domainname"), admitted},
		"user with host users":         {withSysctls(nil, "user.max_user_namespaces"), forbidden(`forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`)},
		"user with own user namespace": {withSysctls(ownUsers, "user.max_user_namespaces"), admitted},
	} {
		h, err := Sysctls(unsafe)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, name, h.Admit(AdmitAttributes{Pod: tc.pod}), tc.want)
	}
}

func TestSysctlsConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		allowed []string
		err     string
	}{
		"none":                   {nil, ""},
		"names and patterns":     {[]string{"kernel.msg*", "net.*", "net.core.somaxconn", "kernel.shm*", "fs.mqueue.*"}, ""},
		"slash pattern":          {[]string{"net/ipv4/*"}, ""},
		"not namespaced":         {[]string{"vm.swappiness"}, `the sysctls "vm.swappiness" are not known to be namespaced`},
		"not namespaced pattern": {[]string{"kernel.*"}, `the sysctls "kernel." are not known to be namespaced`},
		"bad syntax":             {[]string{"Net.Core"}, `sysctl "Net.Core" must have at most 253 characters and match regex`},
		"star in the middle":     {[]string{"net.*.foo"}, `sysctl "net.*.foo" must have at most 253 characters`},
		"too long":               {[]string{"net." + strings.Repeat("a", 250)}, "must have at most 253 characters"},
	} {
		_, err := Sysctls(tc.allowed)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got error %v, want one containing %q", name, err, tc.err)
		}
	}
}

// TestAdmissionOrder runs the handlers in the recommended order: the first
// rejection is the one kubelet reports.
func TestAdmissionOrder(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"disk": "ssd"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}}}
	sysctls, err := Sysctls(nil)
	if err != nil {
		t.Fatal(err)
	}
	handlers := []AdmitHandler{sysctls, PodOS("linux"), ResourceFit(Allocatable{Pods: 2}),
		NodeAffinity(nodeFunc(node)), NodeName(nodeFunc(node)), NodePorts(), Taints(nodeFunc(node))}
	other := portPod("old", v1.ContainerPort{HostPort: 80})
	for name, tc := range map[string]struct {
		mutate func(*v1.Pod)
		others []*v1.Pod
		reason string
	}{
		"everything wrong": {func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "vm.swappiness"}}}
			p.Spec.OS = &v1.PodOS{Name: v1.Windows}
		}, []*v1.Pod{other}, "SysctlForbidden"},
		"os before resources": {func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }, []*v1.Pod{other}, "PodOSNotSupported"},
		"resources before affinity": {func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} },
			[]*v1.Pod{other, portPod("old2")}, "OutOfpods"},
		"affinity before name": {func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
			p.Spec.NodeName = "node-b"
		}, nil, "NodeAffinity"},
		"name before ports": {func(p *v1.Pod) {
			p.Spec.NodeName = "node-b"
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80}}
		}, nil, "NodeName"},
		"ports before taints": {func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80}} },
			[]*v1.Pod{other}, "NodePorts"},
		"taints last": {nil, []*v1.Pod{other}, "TaintToleration"},
	} {
		attrs := AdmitAttributes{Pod: podWith(tc.mutate), OtherPods: tc.others}
		got := ""
		for _, h := range handlers {
			if r := h.Admit(attrs); !r.Admit {
				got = r.Reason
				break
			}
		}
		if got != tc.reason {
			t.Errorf("%s: rejected with %q, want %q", name, got, tc.reason)
		}
	}
}

func TestResourceFitCountsOverhead(t *testing.T) {
	pod := func(cpu, overhead string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		if overhead != "" {
			p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse(overhead)}
		}
		return p
	}
	fit := ResourceFit(Allocatable{MilliCPU: 1000})
	if r := fit.Admit(AdmitAttributes{Pod: pod("900m", "")}); !r.Admit {
		t.Fatalf("900m without overhead rejected: %+v", r)
	}
	r := fit.Admit(AdmitAttributes{Pod: pod("900m", "200m")})
	if r.Admit || r.Reason != ReasonOutOfCPU || r.Message != "Node didn't have enough resource: cpu, requested: 1100, used: 0, capacity: 1000" {
		t.Errorf("900m + 200m overhead: %+v, want OutOfcpu requested 1100", r)
	}
	r = fit.Admit(AdmitAttributes{Pod: pod("500m", ""), OtherPods: []*v1.Pod{pod("300m", "300m")}})
	if r.Admit || r.Message != "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000" {
		t.Errorf("other pod's overhead not counted: %+v", r)
	}
}

func TestResourceFitExtended(t *testing.T) {
	pod := func(n int64) *v1.Pod {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{"example.com/r": q}, Limits: v1.ResourceList{"example.com/r": q}}}}}}
	}
	// backed: the scheduler backed example.com/r of container name by
	// the pod's extended resource claim (DRA).
	backed := func(p *v1.Pod, name string) *v1.Pod {
		p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "c",
			RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: name, ResourceName: "example.com/r", RequestName: "container-0-request-0"}}}
		return p
	}
	implicit := func() *v1.Pod {
		p := pod(1)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"deviceclass.resource.kubernetes.io/gpu": resource.MustParse("1")}
		return p
	}
	tests := map[string]struct {
		offered    map[v1.ResourceName]int64
		pod        *v1.Pod
		others     []*v1.Pod
		wantReason string
		wantMsg    string
	}{
		"fits":                       {offered: map[v1.ResourceName]int64{"example.com/r": 2}, pod: pod(1), others: []*v1.Pod{pod(1)}},
		"backed by DRA: not counted": {offered: map[v1.ResourceName]int64{"example.com/r": 1}, pod: backed(pod(2), "app"), others: []*v1.Pod{pod(1)}},
		"backed for another container": {offered: map[v1.ResourceName]int64{"example.com/r": 1}, pod: backed(pod(2), "other"),
			wantReason: "OutOfexample.com/r", wantMsg: "Node didn't have enough resource: example.com/r, requested: 2, used: 0, capacity: 1"},
		"implicit DeviceClass resource backed": {offered: map[v1.ResourceName]int64{}, pod: func() *v1.Pod {
			p := backed(implicit(), "app")
			p.Status.ExtendedResourceClaimStatus.RequestMappings[0].ResourceName = "deviceclass.resource.kubernetes.io/gpu"
			return p
		}()},
		"implicit DeviceClass resource not backed": {offered: map[v1.ResourceName]int64{}, pod: implicit(),
			wantReason: "OutOfdeviceclass.resource.kubernetes.io/gpu", wantMsg: "Node didn't have enough resource: deviceclass.resource.kubernetes.io/gpu, requested: 1, used: 0, capacity: 0"},
		"not offered: left unchecked": {offered: map[v1.ResourceName]int64{}, pod: pod(3)},
		"offered at 0 (plugin gone)": {offered: map[v1.ResourceName]int64{"example.com/r": 0}, pod: pod(1),
			wantReason: "OutOfexample.com/r", wantMsg: "Node didn't have enough resource: example.com/r, requested: 1, used: 0, capacity: 0"},
		"the others hold it": {offered: map[v1.ResourceName]int64{"example.com/r": 2}, pod: pod(1), others: []*v1.Pod{pod(2)},
			wantReason: "OutOfexample.com/r", wantMsg: "Node didn't have enough resource: example.com/r, requested: 1, used: 2, capacity: 2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fit := ExtendedFit(func() map[v1.ResourceName]int64 { return tc.offered })
			r := fit.Admit(AdmitAttributes{Pod: tc.pod, OtherPods: tc.others})
			if tc.wantReason == "" {
				if !r.Admit {
					t.Errorf("rejected: %+v", r)
				}
				return
			}
			if r.Admit || r.Reason != tc.wantReason || r.Message != tc.wantMsg {
				t.Errorf("got %+v, want %s %q", r, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
