package node

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

// Labels and annotations kubelet sets on its Node.
const (
	// LabelOSBeta and LabelArchBeta are the deprecated beta OS and
	// architecture labels kubelet still sets.
	LabelOSBeta   = "beta.kubernetes.io/os"
	LabelArchBeta = "beta.kubernetes.io/arch"
	// AnnotationControllerManagedAttachDetach says that volume
	// attach/detach for this node is done by the attach/detach controller.
	AnnotationControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// defaultLabels are the labels kubelet owns: reconciled on an existing
// Node to the values this agent would register with.
var defaultLabels = []string{v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable, LabelOSBeta, LabelArchBeta}

// MaxNamesPerImage is how many names of one image the status lists
// (kubelet's limit).
const MaxNamesPerImage = 5

var buildMetaInvalid = regexp.MustCompile(`[^0-9A-Za-z-]+`)

// KubeletVersion is status.nodeInfo.kubeletVersion: kubeVersion (a
// Kubernetes semver, "v1.37.2", which tools and version-skew checks parse)
// with kernelet's version as semver build metadata:
// "v1.37.2+kernelet.v0.3.0-dev". Characters build metadata cannot hold
// become '-'; empty identifiers are dropped.
func KubeletVersion(kubeVersion, kerneletVersion string) (string, error) {
	base, err := utilversion.ParseSemantic(kubeVersion)
	if err != nil {
		return "", fmt.Errorf("kubernetes version %q: %w", kubeVersion, err)
	}
	ids := []string{"kernelet"}
	for _, id := range strings.Split(kerneletVersion, ".") {
		if id = strings.Trim(buildMetaInvalid.ReplaceAllString(id, "-"), "-"); id != "" {
			ids = append(ids, id)
		}
	}
	v := "v" + base.WithBuildMetadata("").String() + "+" + strings.Join(ids, ".")
	if _, err := utilversion.ParseSemantic(v); err != nil {
		return "", fmt.Errorf("kubelet version %q: %w", v, err)
	}
	return v, nil
}

// ContainerRuntimeVersion is status.nodeInfo.containerRuntimeVersion:
// "<name>://<version>" with the version as Kubernetes parses it (a
// leading 'v' dropped: "containerd://1.7.2"); empty when the runtime never
// answered.
func ContainerRuntimeVersion(name, version string) string {
	if name == "" {
		return ""
	}
	if v, err := utilversion.ParseSemantic(version); err == nil {
		return name + "://" + v.String()
	}
	if v, err := utilversion.ParseGeneric(version); err == nil {
		return name + "://" + v.String()
	}
	return name + "://" + version
}

// Addresses are the Node's addresses: an InternalIP per node IP (primary
// first), then the Hostname.
func Addresses(ips []net.IP, hostname string) []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range ips {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	if hostname != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
	}
	return out
}

// Images is status.images: the largest images first, at most max of them
// (max < 0: all), each named by its digests then its tags, at most
// MaxNamesPerImage names (an image without names is listed without, as
// kubelet lists it).
func Images(imgs []Image, max int) []v1.ContainerImage {
	sorted := append([]Image(nil), imgs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SizeBytes > sorted[j].SizeBytes })
	if max >= 0 && len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make([]v1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(append([]string{}, img.RepoDigests...), img.RepoTags...)
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.SizeBytes)})
	}
	return out
}

// RuntimeHandlers is status.runtimeHandlers: each CRI handler, in the
// runtime's order, with its recursiveReadOnlyMounts and userNamespaces
// support.
func RuntimeHandlers(hs []RuntimeHandler) []v1.NodeRuntimeHandler {
	var out []v1.NodeRuntimeHandler
	for _, h := range hs {
		out = append(out, v1.NodeRuntimeHandler{Name: h.Name, Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: ptr.To(h.RecursiveReadOnlyMounts),
			UserNamespaces:          ptr.To(h.UserNamespaces),
		}})
	}
	return out
}

// NodeInfo is status.nodeInfo. kubeProxyVersion stays empty (deprecated;
// kubelet no longer sets it); swap.capacity is SwapTotal, as kubelet
// reports it since NodeSwap is GA (only with swap: the API refuses 0).
func NodeInfo(m Machine, rt RuntimeState, kubeletVersion string) v1.NodeSystemInfo {
	info := v1.NodeSystemInfo{
		MachineID:               m.MachineID,
		SystemUUID:              m.SystemUUID,
		BootID:                  m.BootID,
		KernelVersion:           m.KernelVersion,
		OSImage:                 m.OSImage,
		ContainerRuntimeVersion: ContainerRuntimeVersion(rt.Name, rt.Version),
		KubeletVersion:          kubeletVersion,
		OperatingSystem:         m.OperatingSystem,
		Architecture:            m.Architecture,
	}
	if m.SwapBytes > 0 { // the API refuses a capacity of 0
		info.Swap = &v1.NodeSwapStatus{Capacity: ptr.To(m.SwapBytes)}
	}
	return info
}

// Labels are the labels a new Node is registered with: --node-labels, then
// the labels kubelet owns (hostname, os, arch, their beta forms), which
// win.
func Labels(hostname string, m Machine, nodeLabels map[string]string) map[string]string {
	l := make(map[string]string, len(nodeLabels)+len(defaultLabels))
	for k, v := range nodeLabels {
		l[k] = v
	}
	l[v1.LabelHostname] = hostname
	l[v1.LabelOSStable], l[LabelOSBeta] = m.OperatingSystem, m.OperatingSystem
	l[v1.LabelArchStable], l[LabelArchBeta] = m.Architecture, m.Architecture
	return l
}

// NewNode is the Node to register: name, labels, the controller-managed
// attach/detach annotation, registerWithTaints, and the status at now.
// The events are those of the conditions' first transitions.
func NewNode(cfg *Config, in Inputs, now time.Time) (*v1.Node, []string) {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cfg.NodeName,
			Labels:      Labels(hostname(cfg), cfg.Machine, cfg.NodeLabels),
			Annotations: map[string]string{AnnotationControllerManagedAttachDetach: "true"},
		},
	}
	if len(cfg.Kubelet.RegisterWithTaints) > 0 {
		n.Spec.Taints = append([]v1.Taint(nil), cfg.Kubelet.RegisterWithTaints...)
	}
	// providerID, as kubelet sets it when it creates the Node (an existing
	// Node keeps its own: Reconcile leaves the spec alone).
	n.Spec.ProviderID = cfg.Kubelet.ProviderID
	events := SetStatus(n, cfg, in, now)
	return n, events
}

// Reconcile brings an existing Node (registered earlier, by this agent or
// another) in line with what this agent owns, in place, and reports
// whether it changed. Like kubelet it sets the labels kubelet owns
// (hostname, os, arch and their beta forms) and the controller-managed
// attach/detach annotation. It leaves alone everything else: other labels
// (--node-labels apply only when the Node is created, as with kubelet),
// annotations, taints (registerWithTaints apply only at creation: an admin
// may have removed them since), spec (podCIDR, unschedulable, providerID).
// Capacity is reconciled by the status update (SetStatus).
func Reconcile(existing *v1.Node, cfg *Config) bool {
	want := Labels(hostname(cfg), cfg.Machine, nil)
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, k := range defaultLabels {
		if v := want[k]; v != "" && existing.Labels[k] != v {
			existing.Labels[k] = v
			changed = true
		}
	}
	if existing.Annotations[AnnotationControllerManagedAttachDetach] != "true" {
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[AnnotationControllerManagedAttachDetach] = "true"
		changed = true
	}
	return changed
}

// SetStatus computes n's status at now, in place, from n's current status
// (the last known): capacity and allocatable of the resources kernelet
// manages (cpu, memory, ephemeral-storage, pods, hugepages-*; a huge page
// size no longer present is removed; other resources, e.g. extended
// resources an admin advertised, are kept), addresses, nodeInfo,
// daemonEndpoints, images, runtimeHandlers, volumesInUse, declaredFeatures, features,
// and the conditions
// (Conditions). It returns the
// event reasons of the conditions' transitions.
func SetStatus(n *v1.Node, cfg *Config, in Inputs, now time.Time) []string {
	kc := cfg.Kubelet
	st := &n.Status
	capacity := Capacity(cfg.Machine, kc.MaxPods, kc.PodsPerCore)
	allocatable := Allocatable(capacity, kc.KubeReserved, kc.SystemReserved, cfg.Thresholds)
	st.Capacity = mergeManaged(st.Capacity, capacity)
	st.Allocatable = mergeManaged(st.Allocatable, allocatable)
	SetDevicePlugins(st, in.DeviceCapacity, in.DeviceAllocatable)
	st.Addresses = Addresses(in.NodeIPs, hostname(cfg))
	st.NodeInfo = NodeInfo(cfg.Machine, in.Runtime, cfg.KubeletVersion)
	st.DaemonEndpoints.KubeletEndpoint.Port = kc.Port
	maxImages := 50
	if kc.NodeStatusMaxImages != nil {
		maxImages = int(*kc.NodeStatusMaxImages)
	}
	st.Images = Images(in.Images, maxImages)
	st.RuntimeHandlers = RuntimeHandlers(in.Runtime.Handlers)
	st.VolumesInUse = slices.Clone(in.VolumesInUse)
	st.DeclaredFeatures = slices.Clone(cfg.DeclaredFeatures)
	st.Features = nil
	if p := in.Runtime.SupplementalGroupsPolicy; p != nil {
		st.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(*p)}
	}
	return Conditions(st, in, now)
}

// SetDevicePlugins puts the device plugin resources into st as kubelet:
// each one's capacity and allocatable as given, and an extended resource
// no longer in capacity leaves allocatable. Other extended resources (an
// admin's) are left as they are.
func SetDevicePlugins(st *v1.NodeStatus, capacity, allocatable map[string]int64) {
	if st.Capacity == nil {
		st.Capacity = v1.ResourceList{}
	}
	if st.Allocatable == nil {
		st.Allocatable = v1.ResourceList{}
	}
	for name, n := range capacity {
		st.Capacity[v1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	for name := range st.Allocatable {
		if _, ok := st.Capacity[name]; !ok && isExtended(name) {
			delete(st.Allocatable, name)
		}
	}
	for name, n := range allocatable {
		st.Allocatable[v1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

// isExtended tells an extended resource name: one with a domain outside
// kubernetes.io, not requests.-prefixed.
func isExtended(name v1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, v1.DefaultResourceRequestsPrefix)
}

// mergeManaged returns old with the resources kernelet manages replaced by
// those of computed: a managed resource missing from computed is removed.
func mergeManaged(old, computed v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range old {
		if !managed(name) {
			out[name] = q.DeepCopy()
		}
	}
	for name, q := range computed {
		out[name] = q.DeepCopy()
	}
	return out
}

func managed(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods:
		return true
	}
	return isHugePages(name)
}

// StatusChanged reports whether two statuses differ in anything but the
// conditions' heartbeat times (and the order of conditions).
func StatusChanged(old, new *v1.NodeStatus) bool {
	a, b := old.DeepCopy(), new.DeepCopy()
	a.Conditions, b.Conditions = normalized(a.Conditions), normalized(b.Conditions)
	return !equality.Semantic.DeepEqual(a, b)
}

func normalized(cs []v1.NodeCondition) []v1.NodeCondition {
	out := make([]v1.NodeCondition, len(cs))
	for i, c := range cs {
		c.LastHeartbeatTime = metav1.Time{}
		out[i] = c
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// ShouldPatch decides whether to write a computed status: when it changed,
// or when reportFrequency has passed since the last write (lastReport;
// zero: never written by this agent).
func ShouldPatch(changed bool, lastReport, now time.Time, reportFrequency time.Duration) bool {
	return changed || lastReport.IsZero() || now.Sub(lastReport) >= reportFrequency
}

func hostname(cfg *Config) string {
	if cfg.Hostname != "" {
		return cfg.Hostname
	}
	return cfg.NodeName
}
