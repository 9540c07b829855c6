package podconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// The labels kubelet puts on sandboxes and containers, and reads back to
// know which pod and container a runtime object belongs to (published in
// k8s.io/kubelet/pkg/types). They are facts other tools (crictl filters,
// log shippers, cAdvisor) depend on.
const (
	LabelPodName       = kubelettypes.KubernetesPodNameLabel
	LabelPodNamespace  = kubelettypes.KubernetesPodNamespaceLabel
	LabelPodUID        = kubelettypes.KubernetesPodUIDLabel
	LabelContainerName = kubelettypes.KubernetesContainerNameLabel
)

// The annotations kubelet puts on containers, to recover what it needs of
// the spec after a restart, when the pod may be gone from every source.
const (
	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPreStopHandler           = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts           = "io.kubernetes.container.ports"
	AnnotationTerminationGracePeriod   = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationDeletionGracePeriod      = "io.kubernetes.pod.deletionGracePeriod"
)

// AnnotationRestartAllEpoch is kernelet's own: how many times the pod had
// restarted all its containers in place (RestartAllContainers rules) when
// the container was created; absent means 0.
const AnnotationRestartAllEpoch = "kernelet.io/restart-all-epoch"

// Errors of the parse functions, for errors.Is.
var (
	// ErrNotPodObject: the identity labels are missing — the sandbox or
	// container was not created for a pod by kernelet or kubelet.
	ErrNotPodObject = errors.New("not a pod's runtime object")
	// ErrBadAnnotation: an annotation is present but unreadable; the
	// parsed value is left at its zero value.
	ErrBadAnnotation = errors.New("unreadable annotation")
)

// SandboxLabels are the labels of pod's sandbox: the pod's own labels plus
// its name, namespace and UID (which win over pod labels of the same key).
func SandboxLabels(pod *v1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+3)
	maps.Copy(l, pod.Labels)
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

// SandboxAnnotations are the annotations of pod's sandbox: a copy of the
// pod's annotations.
func SandboxAnnotations(pod *v1.Pod) map[string]string {
	a := make(map[string]string, len(pod.Annotations))
	maps.Copy(a, pod.Annotations)
	return a
}

// ContainerLabels are the labels of container c of pod: the pod's name,
// namespace and UID, and the container's name. Pod labels are not copied.
func ContainerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

// ContainerAnnotations are the annotations of container c of pod when it is
// started for the restartCount-th time: its hash (HashContainer, lowercase
// hex), the restart count, the termination message path and policy, the
// pod's termination grace period and deletion grace period when set, and
// the preStop handler and the ports as JSON when the container has them.
func ContainerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(HashContainer(c), 16),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		a[AnnotationTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		a[AnnotationDeletionGracePeriod] = strconv.FormatInt(*g, 10)
	}
	// Marshalling API types cannot fail: they hold no channels, funcs or
	// unsupported floats.
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		b, _ := json.Marshal(c.Lifecycle.PreStop)
		a[AnnotationPreStopHandler] = string(b)
	}
	if len(c.Ports) > 0 {
		b, _ := json.Marshal(c.Ports)
		a[AnnotationContainerPorts] = string(b)
	}
	return a
}

// hashVersion starts the hashed bytes, so a deliberate change of what is
// hashed is explicit (and restarts every container once).
const hashVersion = "kernelet-container-hash/v1\n"

// hashedContainer is what HashContainer hashes: kernelet's own canonical
// form of the fields that define the process a container runs, with API
// defaults applied, so that a pod that was or was not defaulted hashes
// alike and new optional fields in k8s.io/api do not change the hash.
type hashedContainer struct {
	Name       string          `json:"name"`
	Image      string          `json:"image"`
	Command    []string        `json:"command"`
	Args       []string        `json:"args"`
	WorkingDir string          `json:"workingDir"`
	Env        []hashedEnv     `json:"env"`
	EnvFrom    []hashedEnvFrom `json:"envFrom"`
	Ports      []hashedPort    `json:"ports"`
	Mounts     []hashedMount   `json:"mounts"`
	Devices    []hashedDevice  `json:"devices"`
	TermPath   string          `json:"terminationMessagePath"`
	TermPolicy string          `json:"terminationMessagePolicy"`
	Stdin      bool            `json:"stdin"`
	StdinOnce  bool            `json:"stdinOnce"`
	TTY        bool            `json:"tty"`
}

type hashedEnv struct {
	Name      string          `json:"name"`
	Value     string          `json:"value"`
	ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
}

type hashedEnvFrom struct {
	Prefix    string `json:"prefix"`
	ConfigMap string `json:"configMap,omitempty"`
	Secret    string `json:"secret,omitempty"`
	Optional  bool   `json:"optional"`
}

type hashedPort struct {
	Name          string `json:"name"`
	ContainerPort int32  `json:"containerPort"`
	HostPort      int32  `json:"hostPort"`
	HostIP        string `json:"hostIP"`
	Protocol      string `json:"protocol"`
}

type hashedMount struct {
	Name        string `json:"name"`
	MountPath   string `json:"mountPath"`
	ReadOnly    bool   `json:"readOnly"`
	SubPath     string `json:"subPath"`
	SubPathExpr string `json:"subPathExpr"`
	Propagation string `json:"propagation"`
}

type hashedDevice struct {
	Name       string `json:"name"`
	DevicePath string `json:"devicePath"`
}

// HashContainer is kernelet's container hash: FNV-1a (64 bit) over a
// canonical JSON form of the fields whose change needs a new container —
// name, image, command, args, workingDir, env and envFrom, ports,
// volumeMounts, volumeDevices, terminationMessagePath/Policy, stdin,
// stdinOnce, tty — with API defaults applied (port protocol TCP,
// terminationMessagePath /dev/termination-log, policy File, mount
// propagation None).
//
// Left out on purpose: resources and resizePolicy (resized in place, never
// a restart), probes and lifecycle (read from the spec when used; the
// preStop handler is kept in its own annotation), imagePullPolicy,
// restartPolicy and restartPolicyRules (they decide restarts, they do not
// define the process), and securityContext (API defaulting of its fields
// has changed between releases; a hash that moves with the API server
// version would restart every container of the node on an upgrade). Of
// the hashed fields, an API pod can only change its image; a static pod
// whose manifest changes gets a new UID and so new containers anyway — the
// hash guards against anything else that reuses a UID.
func HashContainer(c *v1.Container) uint64 {
	h := hashedContainer{
		Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir,
		TermPath: c.TerminationMessagePath, TermPolicy: string(c.TerminationMessagePolicy),
		Stdin: c.Stdin, StdinOnce: c.StdinOnce, TTY: c.TTY,
	}
	if h.TermPath == "" {
		h.TermPath = v1.TerminationMessagePathDefault
	}
	if h.TermPolicy == "" {
		h.TermPolicy = string(v1.TerminationMessageReadFile)
	}
	for _, e := range c.Env {
		he := hashedEnv{Name: e.Name, Value: e.Value}
		if e.ValueFrom != nil {
			he.ValueFrom, _ = json.Marshal(e.ValueFrom)
		}
		h.Env = append(h.Env, he)
	}
	for _, e := range c.EnvFrom {
		he := hashedEnvFrom{Prefix: e.Prefix}
		if r := e.ConfigMapRef; r != nil {
			he.ConfigMap, he.Optional = r.Name, r.Optional != nil && *r.Optional
		}
		if r := e.SecretRef; r != nil {
			he.Secret, he.Optional = r.Name, r.Optional != nil && *r.Optional
		}
		h.EnvFrom = append(h.EnvFrom, he)
	}
	for _, p := range c.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		h.Ports = append(h.Ports, hashedPort{Name: p.Name, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIP: p.HostIP, Protocol: proto})
	}
	for _, m := range c.VolumeMounts {
		prop := string(v1.MountPropagationNone)
		if m.MountPropagation != nil && *m.MountPropagation != "" {
			prop = string(*m.MountPropagation)
		}
		h.Mounts = append(h.Mounts, hashedMount{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly, SubPath: m.SubPath, SubPathExpr: m.SubPathExpr, Propagation: prop})
	}
	for _, d := range c.VolumeDevices {
		h.Devices = append(h.Devices, hashedDevice{Name: d.Name, DevicePath: d.DevicePath})
	}
	b, _ := json.Marshal(h) // plain strings, ints, bools and raw JSON: cannot fail
	f := fnv.New64a()
	_, _ = f.Write([]byte(hashVersion))
	_, _ = f.Write(b)
	return f.Sum64()
}

// SandboxInfo is what a sandbox's labels say about its pod.
type SandboxInfo struct {
	PodName, PodNamespace, PodUID string
}

// ParseSandboxLabels reads the pod identity back from a sandbox's labels.
// It returns what it found, with ErrNotPodObject when the name, namespace
// or UID label is missing or empty.
func ParseSandboxLabels(labels map[string]string) (SandboxInfo, error) {
	info := SandboxInfo{PodName: labels[LabelPodName], PodNamespace: labels[LabelPodNamespace], PodUID: labels[LabelPodUID]}
	return info, missing(labels, LabelPodName, LabelPodNamespace, LabelPodUID)
}

// ContainerInfo is what a container's labels and annotations say about it.
// Values that are missing or unreadable are zero.
type ContainerInfo struct {
	PodName, PodNamespace, PodUID string
	ContainerName                 string
	// Hash is the container hash; 0 when missing or unreadable (never equal
	// to a spec's hash in practice, so the container counts as changed).
	Hash uint64
	// RestartCount is the restart count the container was started with.
	RestartCount int
	// RestartAllEpoch is AnnotationRestartAllEpoch's value (0 when absent).
	RestartAllEpoch          int
	TerminationMessagePath   string
	TerminationMessagePolicy v1.TerminationMessagePolicy
	// TerminationGracePeriod and DeletionGracePeriod are in seconds; nil
	// when not recorded.
	TerminationGracePeriod *int64
	DeletionGracePeriod    *int64
	// PreStop is the preStop handler the container was started with.
	PreStop *v1.LifecycleHandler
	// Ports are the container's ports.
	Ports []v1.ContainerPort
}

// ParseContainer reads back what ContainerLabels and ContainerAnnotations
// recorded, for restart recovery and relist. It never gives up early: the
// info holds every value it could read, and the error (nil when all is
// well) joins ErrNotPodObject for missing identity labels and
// ErrBadAnnotation for each annotation present but unreadable (garbled
// number, negative restart count, broken JSON). A missing optional
// annotation is not an error; a missing hash or restart count is not
// either (kubelet treats both as zero too).
func ParseContainer(labels, annotations map[string]string) (ContainerInfo, error) {
	info := ContainerInfo{
		PodName:                  labels[LabelPodName],
		PodNamespace:             labels[LabelPodNamespace],
		PodUID:                   labels[LabelPodUID],
		ContainerName:            labels[LabelContainerName],
		TerminationMessagePath:   annotations[AnnotationTerminationMessagePath],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[AnnotationTerminationMessagePolicy]),
	}
	errs := []error{missing(labels, LabelPodName, LabelPodNamespace, LabelPodUID, LabelContainerName)}
	bad := func(key, v string, err error) {
		errs = append(errs, fmt.Errorf("%w %s=%q: %w", ErrBadAnnotation, key, v, err))
	}
	if v, ok := annotations[AnnotationContainerHash]; ok {
		if h, err := strconv.ParseUint(v, 16, 64); err != nil {
			bad(AnnotationContainerHash, v, err)
		} else {
			info.Hash = h
		}
	}
	if v, ok := annotations[AnnotationRestartCount]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad(AnnotationRestartCount, v, err)
		case n < 0:
			bad(AnnotationRestartCount, v, errors.New("negative"))
		default:
			info.RestartCount = n
		}
	}
	if v, ok := annotations[AnnotationRestartAllEpoch]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			bad(AnnotationRestartAllEpoch, v, errors.Join(err, errors.New("not a count")))
		} else {
			info.RestartAllEpoch = n
		}
	}
	for _, g := range []struct {
		key string
		dst **int64
	}{
		{AnnotationTerminationGracePeriod, &info.TerminationGracePeriod},
		{AnnotationDeletionGracePeriod, &info.DeletionGracePeriod},
	} {
		key, dst := g.key, g.dst
		if v, ok := annotations[key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				bad(key, v, err)
				continue
			}
			*dst = &n
		}
	}
	if v, ok := annotations[AnnotationPreStopHandler]; ok {
		var h v1.LifecycleHandler
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			bad(AnnotationPreStopHandler, v, err)
		} else {
			info.PreStop = &h
		}
	}
	if v, ok := annotations[AnnotationContainerPorts]; ok {
		var ports []v1.ContainerPort
		if err := json.Unmarshal([]byte(v), &ports); err != nil {
			bad(AnnotationContainerPorts, v, err)
		} else {
			info.Ports = ports
		}
	}
	return info, errors.Join(errs...)
}

// missing returns ErrNotPodObject naming the keys that are absent or empty.
func missing(labels map[string]string, keys ...string) error {
	var gone []string
	for _, k := range keys {
		if labels[k] == "" {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return fmt.Errorf("%w: missing labels %q", ErrNotPodObject, gone)
}

// withRestartAllEpoch adds AnnotationRestartAllEpoch to a when epoch is
// above 0.
func withRestartAllEpoch(a map[string]string, epoch int) map[string]string {
	if epoch > 0 {
		a[AnnotationRestartAllEpoch] = strconv.Itoa(epoch)
	}
	return a
}
