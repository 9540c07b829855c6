package podconfig

import (
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/internal/podutil"
)

// volumeKind names the source of a volume as the API does ("configMap",
// "persistentVolumeClaim"), or "unknown".
func volumeKind(v v1.Volume) string {
	src := reflect.ValueOf(v.VolumeSource)
	for i := 0; i < src.NumField(); i++ {
		if f := src.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(src.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// supportedVolume tells whether kernelet can set up v's kind of volume
// (persistentVolumeClaim, generic ephemeral and csi: the CSI ones,
// agent/volumemanager, which refuses the others when it mounts).
func supportedVolume(v v1.Volume) bool {
	s := v.VolumeSource
	return s.EmptyDir != nil || s.HostPath != nil || s.ConfigMap != nil || s.Secret != nil ||
		s.DownwardAPI != nil || s.Projected != nil || s.PersistentVolumeClaim != nil || s.Ephemeral != nil || s.CSI != nil
}

// Sysctl prefixes that live in the network and ipc namespaces: set on a pod
// that shares the node's namespace, they would change the node.
var (
	netSysctlPrefixes = []string{"net."}
	ipcSysctlPrefixes = []string{"kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue."}
)

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) || s == strings.TrimSuffix(p, ".") {
			return true
		}
	}
	return false
}

// hugePagesOf is the hugepages-<size> resource a resourceFieldRef's
// requests.* or limits.* names, or "-" (matching no resource).
func hugePagesOf(fieldRef string) string {
	_, name, _ := strings.Cut(fieldRef, ".")
	if _, ok := qos.HugePageSize(v1.ResourceName(name)); ok {
		return name
	}
	return "-"
}

// atomicWriterUser names the first field of a configMap, secret,
// downwardAPI or projected volume that asks for its files to be owned by
// a user (defaultUser, items[].user, serviceAccountToken.user; the
// AtomicWriteVolumeUserFields fields), or "".
func atomicWriterUser(s v1.VolumeSource) string {
	keys := func(prefix string, items []v1.KeyToPath) string {
		for j, it := range items {
			if it.User != nil {
				return fmt.Sprintf("%sitems[%d].user", prefix, j)
			}
		}
		return ""
	}
	files := func(prefix string, items []v1.DownwardAPIVolumeFile) string {
		for j, it := range items {
			if it.User != nil {
				return fmt.Sprintf("%sitems[%d].user", prefix, j)
			}
		}
		return ""
	}
	switch {
	case s.ConfigMap != nil && s.ConfigMap.DefaultUser != nil, s.Secret != nil && s.Secret.DefaultUser != nil,
		s.DownwardAPI != nil && s.DownwardAPI.DefaultUser != nil, s.Projected != nil && s.Projected.DefaultUser != nil:
		return volumeKind(v1.Volume{VolumeSource: s}) + ".defaultUser"
	case s.ConfigMap != nil:
		return keys("configMap.", s.ConfigMap.Items)
	case s.Secret != nil:
		return keys("secret.", s.Secret.Items)
	case s.DownwardAPI != nil:
		return files("downwardAPI.", s.DownwardAPI.Items)
	case s.Projected != nil:
		for j, src := range s.Projected.Sources {
			p := fmt.Sprintf("projected.sources[%d].", j)
			var f string
			switch {
			case src.ConfigMap != nil:
				f = keys(p+"configMap.", src.ConfigMap.Items)
			case src.Secret != nil:
				f = keys(p+"secret.", src.Secret.Items)
			case src.DownwardAPI != nil:
				f = files(p+"downwardAPI.", src.DownwardAPI.Items)
			case src.ServiceAccountToken != nil && src.ServiceAccountToken.User != nil:
				f = p + "serviceAccountToken.user"
			}
			if f != "" {
				return f
			}
		}
	}
	return ""
}

// supportedFieldRefs are the downward-API fields an env var can name
// (besides metadata.labels['k'] and metadata.annotations['k']).
var supportedFieldRefs = map[string]bool{
	"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
	"spec.nodeName": true, "spec.serviceAccountName": true,
	"status.hostIP": true, "status.hostIPs": true, "status.podIP": true, "status.podIPs": true,
}

// envFieldRef reports whether an env var can name the downward-API field
// path: one of supportedFieldRefs, or one label or annotation.
func envFieldRef(path string) bool {
	_, label := podutil.SubscriptKey(path, "metadata.labels")
	_, annotation := podutil.SubscriptKey(path, "metadata.annotations")
	return supportedFieldRefs[path] || label || annotation
}

// ValidatePodForRuntime lists the fields of pod that kernelet cannot run
// yet, all at once, as an *UnsupportedError (errors.Is ErrUnsupported), or
// returns nil. It is meant for admission: the message names each field and
// why. Checked:
//   - spec.os.name windows; hostNetwork, hostPID or hostIPC with
//     hostUsers: false (the API server's rule, for static pods);
//     supplementalGroupsPolicy Strict;
//   - sysctls that would change the node: net.* with hostNetwork, ipc ones
//     with hostIPC;
//   - volumes other than emptyDir, hostPath, configMap, secret,
//     persistentVolumeClaim, ephemeral, csi, downwardAPI and projected (configMap, secret, downwardAPI,
//     serviceAccountToken sources), emptyDir with a mode,
//     files owned by a user (defaultUser, items[].user);
//   - per container: fieldRef paths and resourceFieldRef resources the env cannot resolve;
//     recursiveReadOnly Enabled; bindMountOptions;
//     procMount Unmasked without hostUsers: false (the
//     API server's rule, for static pods); lifecycle.stopSignal;
//     HTTP/2 (h2c) and TLS gRPC probes; restartPolicyRules with an action
//     other than Restart (RestartAllContainers: kubelet's
//     RestartAllContainersOnContainerExits is not implemented);
//   - status: nodeAllocatableResourceClaimStatuses (node resources from
//     dynamic resource allocation, which the scheduler records there).
func ValidatePodForRuntime(pod *v1.Pod) error {
	var fields []UnsupportedField
	add := func(path, format string, args ...any) {
		fields = append(fields, UnsupportedField{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	spec := &pod.Spec
	if spec.OS != nil && spec.OS.Name == v1.Windows {
		add("spec.os.name", "windows pods cannot run on a Linux node")
	}
	if !hostUsers(pod) {
		// The API server's rule (UserNamespacesHostNetworkSupport is off),
		// for static pods.
		for _, h := range []struct {
			path string
			on   bool
		}{{"spec.hostNetwork", spec.HostNetwork}, {"spec.hostPID", spec.HostPID}, {"spec.hostIPC", spec.HostIPC}} {
			if h.on {
				add(h.path, "forbidden when `hostUsers` is false")
			}
		}
	}
	if psc := spec.SecurityContext; psc != nil {
		if psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
			add("spec.securityContext.supplementalGroupsPolicy", "Strict is not supported by the runtime")
		}
		for i, s := range psc.Sysctls {
			name := SysctlDotted(s.Name)
			p := fmt.Sprintf("spec.securityContext.sysctls[%d]", i)
			if spec.HostNetwork && hasAnyPrefix(name, netSysctlPrefixes) {
				add(p, "sysctl %q would change the node's network namespace (hostNetwork)", name)
			}
			if spec.HostIPC && hasAnyPrefix(name, ipcSysctlPrefixes) {
				add(p, "sysctl %q would change the node's IPC namespace (hostIPC)", name)
			}
		}
	}
	for i, v := range spec.Volumes {
		p := fmt.Sprintf("spec.volumes[%d]", i)
		if f := atomicWriterUser(v.VolumeSource); f != "" {
			add(p+"."+f, "volume %q: files owned by a chosen user are not supported yet", v.Name)
		}
		switch {
		case v.EmptyDir != nil && v.EmptyDir.Mode != nil:
			add(p+".emptyDir.mode", "volume %q: the mode of an emptyDir is not supported yet", v.Name)
		case v.Projected != nil:
			for j, src := range v.Projected.Sources {
				if src.ClusterTrustBundle != nil || src.PodCertificate != nil {
					add(fmt.Sprintf("%s.projected.sources[%d]", p, j), "volume %q: clusterTrustBundle and podCertificate projections are not supported yet", v.Name)
				}
			}
		case supportedVolume(v), v.Image != nil:
		default:
			add(p, "volume %q: %s volumes are not supported yet", v.Name, volumeKind(v))
		}
	}
	for _, set := range []struct {
		path string
		list []v1.Container
	}{{"spec.initContainers", spec.InitContainers}, {"spec.containers", spec.Containers}} {
		for i := range set.list {
			fields = append(fields, unsupportedInContainer(fmt.Sprintf("%s[%d]", set.path, i), &set.list[i], hostUsers(pod))...)
		}
	}
	if len(pod.Status.NodeAllocatableResourceClaimStatuses) > 0 {
		add("status.nodeAllocatableResourceClaimStatuses", "node resources allocated by dynamic resource allocation are not supported")
	}
	if len(fields) == 0 {
		return nil
	}
	return &UnsupportedError{Fields: fields}
}

// hostUsers tells whether pod uses the node's user namespace (hostUsers
// unset or true).
func hostUsers(pod *v1.Pod) bool { return pod.Spec.HostUsers == nil || *pod.Spec.HostUsers }

func unsupportedInContainer(prefix string, c *v1.Container, hostUsers bool) []UnsupportedField {
	var fields []UnsupportedField
	add := func(path, format string, args ...any) {
		fields = append(fields, UnsupportedField{Path: prefix + path, Reason: fmt.Sprintf(format, args...)})
	}
	for i, e := range c.Env {
		src := e.ValueFrom
		if src == nil {
			continue
		}
		p := fmt.Sprintf(".env[%d]", i)
		switch {
		case src.FieldRef != nil:
			if fp := src.FieldRef.FieldPath; !envFieldRef(fp) {
				add(p, "env %q: fieldRef %q is not supported", e.Name, fp)
			}
		case src.ResourceFieldRef != nil:
			r := src.ResourceFieldRef
			switch r.Resource {
			case "requests.cpu", "limits.cpu", "requests.memory", "limits.memory", "requests.ephemeral-storage", "limits.ephemeral-storage":
			case "requests." + hugePagesOf(r.Resource), "limits." + hugePagesOf(r.Resource):
			default:
				add(p, "env %q: resourceFieldRef %q is not supported yet", e.Name, r.Resource)
			}
			if r.ContainerName != "" && r.ContainerName != c.Name {
				add(p, "env %q: resourceFieldRef of another container (%q)", e.Name, r.ContainerName)
			}
		}
	}
	for i, m := range c.VolumeMounts {
		p := fmt.Sprintf(".volumeMounts[%d]", i)
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
			add(p, "volume mount %q: recursive read-only mounts are not supported by the runtime", m.Name)
		}
		if len(m.BindMountOptions) > 0 {
			add(p+".bindMountOptions", "volume mount %q: bind mount options are not supported yet", m.Name)
		}
	}
	for _, pr := range []struct {
		path  string
		probe *v1.Probe
	}{{".livenessProbe", c.LivenessProbe}, {".readinessProbe", c.ReadinessProbe}, {".startupProbe", c.StartupProbe}} {
		switch h := pr.probe; {
		case h == nil:
		case h.HTTPGet != nil && h.HTTPGet.Protocol != nil && *h.HTTPGet.Protocol == v1.HTTPProtocolHTTP2:
			add(pr.path+".httpGet.protocol", "HTTP/2 (h2c) probes are not supported yet")
		case h.GRPC != nil && h.GRPC.Mode != nil && *h.GRPC.Mode == v1.GRPCProbeModeTLS:
			add(pr.path+".grpc.mode", "gRPC probes over TLS are not supported yet")
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount && hostUsers {
			add(".securityContext.procMount", "`hostUsers` must be false to use `Unmasked`")
		}
	}
	if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		add(".lifecycle.stopSignal", "stop signals are not supported by the runtime")
	}
	for i, r := range c.RestartPolicyRules {
		switch r.Action {
		case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
		default:
			add(fmt.Sprintf(".restartPolicyRules[%d].action", i), "restart rule action %q is not supported (only %q and %q)", r.Action,
				v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers)
		}
	}
	return fields
}
