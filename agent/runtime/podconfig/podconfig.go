package podconfig

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/oom"
)

// maxFQDNLength bounds the hostname of setHostnameAsFQDN pods (the kernel's
// limit).
const maxFQDNLength = 64

// PodLogDir is the directory of a pod's logs:
// <podLogsDir>/<namespace>_<name>_<uid>.
func PodLogDir(podLogsDir, namespace, name, uid string) string {
	if podLogsDir == "" {
		podLogsDir = DefaultPodLogsDir
	}
	return filepath.Join(podLogsDir, namespace+"_"+name+"_"+uid)
}

// ContainerLogPath is a container's log file relative to its pod's log
// directory: <container name>/<restart count>.log. The caller creates the
// <container name> directory.
func ContainerLogPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, strconv.Itoa(restartCount)+".log")
}

// SandboxConfig is the runtime configuration of pod's sandbox:
//   - metadata: name, namespace, UID, opts.Attempt;
//   - hostname: empty for hostNetwork pods (they keep the node's; containerd
//     1.6 refuses a hostname there), else PodHostnameAndDomain's hostname;
//     with setHostnameAsFQDN and a domain it is <hostname>.<domain>. The
//     domain has no other use in the CRI (it only matters to /etc/hosts);
//   - log directory PodLogDir; DNS from DNSConfig;
//   - port mappings of the regular and sidecar containers' ports that have a
//     hostPort;
//   - labels SandboxLabels, annotations SandboxAnnotations;
//   - Linux: the absolute opts.CgroupParent; sysctls (a "/"-separated name
//     is turned into the "." form); the security context (network, pid and
//     ipc namespaces — NODE for host*, pid POD with shareProcessNamespace,
//     else CONTAINER —, runAsUser, runAsGroup, supplementalGroups plus
//     fsGroup, privileged when any container is, seccomp); Resources from
//     the pod's effective requests and limits without overhead (cpu shares
//     from the requests, a cpu quota and a memory limit only when every
//     container has that limit or the pod has a pod-level one — the values
//     of the pod cgroup); Overhead from spec.overhead.
func SandboxConfig(pod *v1.Pod, opts SandboxOptions) (*runtimeapi.PodSandboxConfig, error) {
	if !path.IsAbs(opts.CgroupParent) {
		return nil, fmt.Errorf("sandbox config: cgroup parent %q is not an absolute path", opts.CgroupParent)
	}
	hostname, err := podHostname(pod, opts.ClusterDomain)
	if err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	dns, err := DNSConfig(pod, opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions:   namespaceOptions(pod, opts.UserNamespace),
		RunAsUser:          int64Value(psc.RunAsUser),
		RunAsGroup:         int64Value(psc.RunAsGroup),
		SupplementalGroups: supplementalGroups(psc),
		Privileged:         anyPrivileged(pod),
		// Passed on as kubelet does; a runtime without SELinux ignores it.
		SelinuxOptions: seLinuxOptions(psc.SELinuxOptions),
	}
	sc.Seccomp, err = seccompProfile(psc.SeccompProfile, false, opts.SeccompOptions)
	if err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	linux := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    opts.CgroupParent,
		SecurityContext: sc,
		Resources:       sandboxResources(pod, opts.CPUOptions, opts.ExclusiveCPUs),
	}
	if len(psc.Sysctls) > 0 {
		linux.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			linux.Sysctls[SysctlDotted(s.Name)] = s.Value
		}
	}
	if oh := qos.Overhead(pod); oh != (qos.Amounts{}) {
		linux.Overhead = linuxResources(oh.CPUMilli, oh.CPUMilli, oh.MemoryBytes, opts.CPUOptions)
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   opts.Attempt,
		},
		Hostname:     hostname,
		LogDirectory: PodLogDir(opts.PodLogsDir, pod.Namespace, pod.Name, string(pod.UID)),
		DnsConfig:    dns,
		PortMappings: portMappings(pod),
		Labels:       SandboxLabels(pod),
		Annotations:  SandboxAnnotations(pod),
		Linux:        linux,
	}, nil
}

// podHostname is the sandbox hostname (see SandboxConfig): the pod's
// hostname, or with setHostnameAsFQDN and a domain <hostname>.<domain>,
// at most maxFQDNLength characters.
func podHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	if pod.Spec.HostNetwork {
		return "", nil
	}
	hostname, domain, err := PodHostnameAndDomain(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	if fqdn := pod.Spec.SetHostnameAsFQDN; fqdn == nil || !*fqdn || domain == "" {
		return hostname, nil
	}
	full := hostname + "." + domain
	if len(full) > maxFQDNLength {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			full, maxFQDNLength, len(full))
	}
	return full, nil
}

// PodHostnameAndDomain is the pod's short hostname and its domain, as kubelet
// derives them:
//   - spec.hostnameOverride (a DNS subdomain, so it may contain dots) is the
//     hostname as given, with no domain: the subdomain and the cluster
//     domain do not apply;
//   - else spec.hostname (a DNS label) or the pod name; the domain is
//     <subdomain>.<namespace>.svc.<clusterDomain> when the pod has a
//     subdomain and the node a cluster domain.
//
// A hostname longer than 63 characters is cut to 63 and trailing "-" and
// "." trimmed.
func PodHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if errs := validation.IsDNS1123Subdomain(*o); len(errs) > 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(errs, ";"))
		}
		hostname, err = truncateHostname(pod.Name, *o)
		return hostname, "", err
	}
	hostname = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if errs := validation.IsDNS1123Label(h); len(errs) > 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", h, strings.Join(errs, ";"))
		}
		hostname = h
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if sub := pod.Spec.Subdomain; sub != "" {
		if errs := validation.IsDNS1123Label(sub); len(errs) > 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", sub, strings.Join(errs, ";"))
		}
		if clusterDomain != "" {
			domain = sub + "." + pod.Namespace + ".svc." + clusterDomain
		}
	}
	return hostname, domain, nil
}

// truncateHostname cuts hostname to a DNS label's 63 characters, trailing
// "-" and "." trimmed.
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= validation.DNS1123LabelMaxLength {
		return hostname, nil
	}
	cut := strings.TrimRight(hostname[:validation.DNS1123LabelMaxLength], "-.")
	if cut == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return cut, nil
}

// SysctlDotted converts a sysctl name written with "/" separators to the
// "." form: when "/" comes before any ".", the two are swapped throughout
// (net/ipv4/conf/eth0.100/rp_filter is net.ipv4.conf.eth0/100.rp_filter).
func SysctlDotted(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

func runtimeProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// portMappings are the host ports of the regular and sidecar containers,
// each protocol/host IP/host port once.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			m := &runtimeapi.PortMapping{Protocol: runtimeProtocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP}
			if !slices.ContainsFunc(out, func(o *runtimeapi.PortMapping) bool {
				return o.Protocol == m.Protocol && o.HostPort == m.HostPort && o.HostIp == m.HostIp
			}) {
				out = append(out, m)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if qos.IsRestartableInit(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// namespaceOptions: the node's network, pid and ipc namespaces for
// hostNetwork, hostPID and hostIPC; else the pod's, except pid, which is
// the container's own unless shareProcessNamespace; the user namespace
// userns (nil: none passed).
func namespaceOptions(pod *v1.Pod, userns *runtimeapi.UserNamespace) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network:       runtimeapi.NamespaceMode_POD,
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		Ipc:           runtimeapi.NamespaceMode_POD,
		UsernsOptions: userns,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// containerNamespaces are the pod's namespaceOptions, with the pid
// namespace of the container targetID (an ephemeral container's target)
// when set and the pod shares none.
func containerNamespaces(pod *v1.Pod, targetID string, userns *runtimeapi.UserNamespace) *runtimeapi.NamespaceOption {
	ns := namespaceOptions(pod, userns)
	if targetID != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, targetID
	}
	return ns
}

func int64Value(v *int64) *runtimeapi.Int64Value {
	if v == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *v}
}

// supplementalGroups are the pod's supplemental groups plus its fsGroup.
func supplementalGroups(psc *v1.PodSecurityContext) []int64 {
	groups := slices.Clone(psc.SupplementalGroups)
	if g := psc.FSGroup; g != nil && !slices.Contains(groups, *g) {
		groups = append(groups, *g)
	}
	return groups
}

// withGroups is groups followed by those of extra it does not have.
func withGroups(groups, extra []int64) []int64 {
	for _, g := range extra {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}

func privileged(c *v1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

func anyPrivileged(pod *v1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.InitContainers, func(c v1.Container) bool { return privileged(&c) }) ||
		slices.ContainsFunc(pod.Spec.Containers, func(c v1.Container) bool { return privileged(&c) })
}

// seccompProfile maps a seccomp profile: privileged is always Unconfined;
// no profile is Unconfined (RuntimeDefault with SeccompDefault); Localhost
// profiles are files under SeccompProfileRoot.
func seccompProfile(p *v1.SeccompProfile, privileged bool, opts SeccompOptions) (*runtimeapi.SecurityProfile, error) {
	unconfined := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	runtimeDefault := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	switch {
	case privileged:
		return unconfined, nil
	case p == nil && opts.SeccompDefault:
		return runtimeDefault, nil
	case p == nil:
		return unconfined, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return runtimeDefault, nil
	case v1.SeccompProfileTypeUnconfined:
		return unconfined, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" || opts.SeccompProfileRoot == "" {
			return nil, errors.New("seccomp: Localhost profile needs a profile name and a seccomp profile root")
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(opts.SeccompProfileRoot, *p.LocalhostProfile),
		}, nil
	}
	return nil, fmt.Errorf("seccomp: unknown profile type %q", p.Type)
}

// apparmorProfile maps an AppArmor profile; nil leaves the runtime's
// default.
func apparmorProfile(p *v1.AppArmorProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	case v1.AppArmorProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = *p.LocalhostProfile
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
}

// period is the CFS period in force.
func (o CPUOptions) period() time.Duration {
	if o.CPUCFSQuotaPeriod <= 0 {
		return DefaultCPUCFSQuotaPeriod
	}
	return o.CPUCFSQuotaPeriod
}

// linuxResources are CRI resources from a cpu request and limit (milliCPU)
// and a memory limit (bytes); a zero limit is none (left 0 in the CRI).
func linuxResources(cpuRequest, cpuLimit, memoryLimit int64, o CPUOptions) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{
		CpuShares:          int64(cgroups.CPUShares(cpuRequest)),
		MemoryLimitInBytes: max(memoryLimit, 0),
	}
	if !o.DisableCPUCFSQuota {
		r.CpuPeriod = o.period().Microseconds()
		if q := cgroups.CPUQuota(cpuLimit, o.period()); q != cgroups.NoLimit {
			r.CpuQuota = q
		}
	}
	return r
}

// sandboxResources are the pod's effective resources without overhead,
// shaped like its pod cgroup: a quota and a memory limit only when every
// container (or the pod level) limits them.
func sandboxResources(pod *v1.Pod, o CPUOptions, exclusiveCPUs bool) *runtimeapi.LinuxContainerResources {
	req, lim, pr := qos.PodRequests(pod), qos.PodLimits(pod), qos.PodResources(pod)
	cpuLimit, memLimit := int64(0), int64(0)
	if pr.AllCPULimits && !exclusiveCPUs {
		cpuLimit = lim.CPUMilli
	}
	if pr.AllMemoryLimits {
		memLimit = lim.MemoryBytes
	}
	return linuxResources(req.CPUMilli, cpuLimit, memLimit, o)
}

// ContainerConfig is the runtime configuration of container c of pod
// (a regular, init or sidecar container):
//   - metadata: name, attempt = opts.RestartCount; image opts.ImageRef (or
//     the spec's), the spec's image as the user-specified one;
//   - command → the image entrypoint override, args → its cmd, both
//     expanded (Expand) against the container's environment (ContainerEnv);
//     workingDir, stdin, stdinOnce, tty;
//   - log path ContainerLogPath; labels ContainerLabels, annotations
//     ContainerAnnotations;
//   - mounts: the volume mounts at the host paths of their volumes in
//     opts.VolumeHostPaths, the managed hosts file (opts.EtcHostsHostPath)
//     at /etc/hosts unless the container mounts one, then
//     opts.TerminationMessageHostPath at
//     terminationMessagePath (default /dev/termination-log);
//   - Linux resources: cpu shares from the cpu request (defaulting to the
//     limit; cgroups.CPUShares), a CFS quota from the cpu limit
//     (cgroups.CPUQuota with cpuCFSQuotaPeriod), the memory limit, and the
//     requested oom_score_adj (oom.ScoreAdj with opts.NodeMemoryCapacity;
//     the runtime may raise it — containerd's restrict_oom_score_adj, a
//     kernel without CAP_SYS_RESOURCE — so the effective value is measured,
//     not assumed); memory.oom.group=1 on cgroup v2 unless
//     SingleProcessOOMKill; Memory QoS (ContainerMemoryQoS) in unified;
//   - Linux security context: the container's settings over the pod's
//     (runAsUser, runAsGroup, seccomp, AppArmor), supplementalGroups plus
//     fsGroup, privileged, readOnlyRootFilesystem, capabilities add/drop,
//     allowPrivilegeEscalation: false → no_new_privs, the pod's
//     namespaces; runAsNonRoot is enforced here against runAsUser or the
//     image user (opts.ImageUID, opts.ImageUsername), with kubelet's
//     messages;
//   - the block volumes of volumeDevices (blockDevices);
//   - what device plugins allocated (opts.Devices, ContainerDevices):
//     devices, CDI devices, mounts first, envs before the container's own,
//     annotations under kernelet's.
//
// Every problem is reported, joined; fields kernelet does not support yet
// match ErrUnsupported.
func ContainerConfig(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.ContainerConfig, error) {
	var errs []error
	image := opts.ImageRef
	if image == "" {
		image = c.Image
	}
	if image == "" {
		errs = append(errs, errors.New("no image"))
	}
	env, err := ContainerEnv(pod, c, opts)
	errs = append(errs, err)
	mounts, err := containerMounts(pod, c, opts, envMap(env))
	errs = append(errs, err)
	devices, err := blockDevices(pod, c, opts.VolumeHostPaths)
	errs = append(errs, err)
	sc, err := containerSecurityContext(pod, c, opts)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("container %q of pod %s: %w", c.Name, podDesc(pod), err)
	}
	if u := opts.UserNamespace; u != nil {
		// As kubelet: every mount idmapped with the pod's mappings (none in
		// NODE mode), so that a pod's user namespace sees its volumes' files
		// owned as on the host's disk.
		for _, m := range mounts {
			m.UidMappings, m.GidMappings = u.Uids, u.Gids
		}
	}
	lookup := envMap(env)
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(max(opts.RestartCount, 0))},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        env,
		Mounts:      mounts,
		Labels:      ContainerLabels(pod, c),
		Annotations: withRestartAllEpoch(ContainerAnnotations(pod, c, opts.RestartCount), opts.RestartAllEpoch),
		LogPath:     ContainerLogPath(c.Name, opts.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c, opts),
			SecurityContext: sc,
		},
	}
	cfg.Devices = devices
	applyDevices(cfg, opts.Devices)
	return cfg, nil
}

// ContainerOOMScoreAdj is the oom_score_adj kernelet requests for container
// c of pod on a node with memoryCapacity bytes.
func ContainerOOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	return oom.ScoreAdj(qos.OOMPod(pod), qos.OOMContainer(pod, c), memoryCapacity)
}

// ContainerResources are the Linux resources container c of pod is created
// with, and updated to by an in-place resize (UpdateContainerResources):
// cpu shares from the request, a CFS quota and a memory limit from the
// container's limits — the pod-level limits where the container sets
// none (qos.EffectiveLimits) —, the oom_score_adj, memory.oom.group,
// Memory QoS, swap and the huge page limits (hugepageLimits).
func ContainerResources(pod *v1.Pod, c *v1.Container, opts ContainerOptions) *runtimeapi.LinuxContainerResources {
	return containerResources(pod, c, opts)
}

func containerResources(pod *v1.Pod, c *v1.Container, opts ContainerOptions) *runtimeapi.LinuxContainerResources {
	req, lim := qos.ContainerRequests(c), qos.ContainerEffectiveLimits(pod, c)
	r := linuxResources(req.CPUMilli, lim.CPUMilli, lim.MemoryBytes, opts.CPUOptions)
	r.OomScoreAdj = int64(ContainerOOMScoreAdj(pod, c, opts.NodeMemoryCapacity))
	r.CpusetCpus, r.CpusetMems = opts.CPUSet, opts.CPUSetMems
	if opts.ExclusiveCPUs {
		r.CpuQuota = 0 // no quota: the CPUs are the container's own
	}
	if opts.CgroupV2 && !opts.SingleProcessOOMKill {
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	if mq := ContainerMemoryQoS(pod, c, opts.MemoryQoS, opts.CgroupV2); len(mq) > 0 {
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		maps.Copy(r.Unified, mq)
	}
	applySwap(r, pod, c, opts.Swap, opts.CgroupV2)
	r.HugepageLimits = hugepageLimits(pod, c, opts.HugePageSizes)
	return r
}

// hugepageLimits are the CRI huge page limits of container c of pod on a
// node with huge pages of sizes (bytes), kubelet's: one per size, the
// container's limit (or the pod-level one) where it sets one, else 0.
func hugepageLimits(pod *v1.Pod, c *v1.Container, sizes []int64) []*runtimeapi.HugepageLimit {
	if len(sizes) == 0 {
		return nil
	}
	want := qos.ContainerHugePageLimits(pod, c)
	out := make([]*runtimeapi.HugepageLimit, 0, len(sizes))
	for _, size := range slices.Sorted(slices.Values(sizes)) {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: cgroups.HugePageSizeName(size), Limit: uint64(max(want[size], 0))})
	}
	return out
}

func mountPropagation(p *v1.MountPropagationMode) runtimeapi.MountPropagation {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
	switch *p {
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// containerMounts are the volume mounts (volumes whose host paths the
// caller prepared) and the termination message file.
func containerMounts(pod *v1.Pod, c *v1.Container, opts ContainerOptions, env func(string) (string, bool)) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	var errs []error
	for idx, vm := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == vm.Name })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("volume mount %q: the pod has no such volume", vm.Name))
			continue
		case pod.Spec.Volumes[i].Image != nil:
			m, err := imageVolumeMount(pod.Spec.Volumes[i], vm, opts, env)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, m)
			continue
		case (vm.SubPath != "" || vm.SubPathExpr != "") && opts.SubPath == nil:
			errs = append(errs, fmt.Errorf("volume mount %q: %w: subPath and subPathExpr need a volume manager", vm.Name, ErrUnsupported))
			continue
		}
		vol := pod.Spec.Volumes[i]
		host, ok := opts.VolumeHostPaths[vol.Name]
		switch {
		case (!ok || host == "") && !supportedVolume(vol):
			errs = append(errs, fmt.Errorf("volume %q: %w: %s volumes are not supported yet", vol.Name, ErrUnsupported, volumeKind(vol)))
			continue
		case !ok || host == "":
			errs = append(errs, fmt.Errorf("volume %q: no host path prepared for it", vol.Name))
			continue
		}
		if sub := subPath(vm, env); sub != "" {
			var err error
			if host, err = opts.SubPath(SubPathRequest{Container: c.Name, MountIndex: idx, Volume: vol.Name,
				VolumeHostPath: host, SubPath: sub}); err != nil {
				errs = append(errs, err) // kubelet's message, naming mount and container
				continue
			}
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      host,
			Readonly:      vm.ReadOnly,
			Propagation:   mountPropagation(vm.MountPropagation),
		})
	}
	if opts.EtcHostsHostPath != "" && !mountsEtcHosts(c) {
		out = append(out, &runtimeapi.Mount{ContainerPath: EtcHostsPath, HostPath: opts.EtcHostsHostPath})
	}
	if opts.TerminationMessageHostPath != "" {
		p := c.TerminationMessagePath
		if p == "" {
			p = v1.TerminationMessagePathDefault
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: p, HostPath: opts.TerminationMessageHostPath})
	}
	return out, errors.Join(errs...)
}

// imageVolumeMount mounts the image of volume vol (pulled by the caller
// into opts.ImageVolumes) at vm's path, read-only, with vm's subPath (or
// expanded subPathExpr) as the image sub path, as kubelet does; the runtime
// resolves and mounts it.
func imageVolumeMount(vol v1.Volume, vm v1.VolumeMount, opts ContainerOptions, env func(string) (string, bool)) (*runtimeapi.Mount, error) {
	spec := opts.ImageVolumes[vol.Name]
	if spec == nil {
		return nil, fmt.Errorf("volume %q: image %q was not pulled", vol.Name, vol.Image.Reference)
	}
	sub := subPath(vm, env)
	if sub != "" {
		if path.IsAbs(sub) {
			return nil, fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
		}
		for _, part := range strings.Split(sub, "/") {
			if part == ".." {
				return nil, fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
			}
		}
	}
	return &runtimeapi.Mount{
		ContainerPath: vm.MountPath,
		Readonly:      true,
		Propagation:   mountPropagation(vm.MountPropagation),
		Image:         spec,
		ImageSubPath:  sub,
	}, nil
}

// subPath is a mount's subPath, or its subPathExpr expanded against the
// container's environment.
func subPath(vm v1.VolumeMount, env func(string) (string, bool)) string {
	if vm.SubPathExpr != "" {
		return Expand(vm.SubPathExpr, env)
	}
	return vm.SubPath
}

// containerSecurityContext merges the pod's security context under the
// container's and checks runAsNonRoot.
func containerSecurityContext(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerSecurityContext, error) {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &v1.SecurityContext{}
	}
	runAsUser, runAsGroup, runAsNonRoot := psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	seccomp, apparmor := psc.SeccompProfile, psc.AppArmorProfile
	if csc.RunAsUser != nil {
		runAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		runAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		runAsNonRoot = csc.RunAsNonRoot
	}
	if csc.SeccompProfile != nil {
		seccomp = csc.SeccompProfile
	}
	if csc.AppArmorProfile != nil {
		apparmor = csc.AppArmorProfile
	}
	if runAsNonRoot != nil && *runAsNonRoot {
		if err := verifyNonRoot(pod, c, runAsUser, opts.ImageUID, opts.ImageUsername); err != nil {
			return nil, err
		}
	}
	priv := privileged(c)
	sp, err := seccompProfile(seccomp, priv, opts.SeccompOptions)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{
		Privileged:         priv,
		NamespaceOptions:   containerNamespaces(pod, opts.TargetContainerID, opts.UserNamespace),
		RunAsUser:          int64Value(runAsUser),
		RunAsGroup:         int64Value(runAsGroup),
		ReadonlyRootfs:     csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem,
		SupplementalGroups: withGroups(supplementalGroups(psc), opts.ExtraSupplementalGroups),
		NoNewPrivs:         csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation,
		Seccomp:            sp,
		Apparmor:           apparmorProfile(apparmor),
		SelinuxOptions:     seLinuxOptions(psc.SELinuxOptions),
		MaskedPaths:        MaskedPaths(csc.ProcMount, opts.ThermalThrottlePaths),
		ReadonlyPaths:      ReadonlyPaths(csc.ProcMount),
	}
	if csc.SELinuxOptions != nil {
		sc.SelinuxOptions = seLinuxOptions(csc.SELinuxOptions)
	}
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	return sc, nil
}

// verifyNonRoot enforces runAsNonRoot with kubelet's messages: an explicit
// runAsUser must not be 0; without one, the image user must be a numeric
// non-zero uid (an image without a user runs as root).
func verifyNonRoot(pod *v1.Pod, c *v1.Container, runAsUser, imageUID *int64, imageUsername string) error {
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		return nil
	}
	switch {
	case imageUID == nil && imageUsername != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", imageUsername, podDesc(pod), c.Name)
	case imageUID == nil || *imageUID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
	}
	return nil
}

// seLinuxOptions is the CRI form of o (nil stays nil). Like kubelet,
// kernelet passes the options on: a runtime on a host without SELinux
// ignores them.
func seLinuxOptions(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}
