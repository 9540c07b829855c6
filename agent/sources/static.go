package sources

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/kernelet/kernelet/internal/imageref"
	"github.com/kernelet/kernelet/internal/podutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FullName is kubelet's pod full name, name_namespace: the key of a pod
// within a source.
func FullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}

// StaticPodUID is the UID of a static pod: 32 hex digits of a SHA-256 over
// the source, its identity (the file path or URL), the node name and the
// canonical JSON of the pod as decoded (before any defaulting). The seen
// time is not part of it, so a restart keeps the UID; any change of the
// manifest, of where it is, or of the node gives a new one.
func StaticPodUID(source, identity, nodeName string, pod *v1.Pod) (types.UID, error) {
	js, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("encode pod: %w", err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte("kernelet static pod v1"), []byte(source), []byte(identity), []byte(nodeName), js} {
		writeField(h, part)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16])), nil
}

// writeField writes a length-prefixed field, so that no two different
// field lists hash the same bytes.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// StaticPod returns a defaulted copy of a decoded pod of a static source
// (pod itself is not changed), or every validation error of it. identity
// is the file path or URL the pod came from; seen is the time for the
// kubernetes.io/config.seen annotation.
func StaticPod(pod *v1.Pod, source, identity, nodeName string, seen time.Time) (*v1.Pod, error) {
	uid := pod.UID // a UID the manifest gives is kept, as kubelet does
	if uid == "" {
		var err error
		if uid, err = StaticPodUID(source, identity, nodeName, pod); err != nil {
			return nil, err
		}
	}
	p := pod.DeepCopy()
	p.TypeMeta = podTypeMeta
	if p.Namespace == "" {
		p.Namespace = v1.NamespaceDefault
	}
	if errs := validateName(pod.Name, nodeName); len(errs) > 0 {
		return nil, invalid("%w", errs.ToAggregate())
	}
	p.Name = pod.Name + "-" + strings.ToLower(nodeName)
	p.UID = uid
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[podutil.AnnotationConfigSource] = source
	p.Annotations[podutil.AnnotationConfigHash] = string(uid)
	p.Annotations[podutil.AnnotationConfigSeen] = seen.UTC().Format(time.RFC3339Nano)
	p.Spec.NodeName = nodeName
	p.Status = v1.PodStatus{Phase: v1.PodPending}
	if source == SourceFile {
		addNoExecuteToleration(&p.Spec)
	}
	defaultPodSpec(&p.Spec)
	if errs := Validate(p); len(errs) > 0 {
		return nil, invalid("%w", errs.ToAggregate())
	}
	return p, nil
}

func validateName(name, nodeName string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if msgs := validation.IsDNS1123Subdomain(name + "-" + strings.ToLower(nodeName)); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, name, strings.Join(msgs, "; ")+` (after appending "-<node name>")`)}
	}
	return nil
}

// addNoExecuteToleration lets a file pod tolerate every NoExecute taint
// for ever, as kubelet does, so node problems never evict it: a matching
// toleration with a time limit is replaced by the unbounded one.
func addNoExecuteToleration(spec *v1.PodSpec) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for i, t := range spec.Tolerations {
		if t.Key == "" && t.Operator == want.Operator && t.Value == "" && t.Effect == want.Effect {
			spec.Tolerations[i] = want
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, want)
}

// defaultPodSpec applies the API defaults the agent acts on, as the API
// server would have for a pod it stored.
func defaultPodSpec(s *v1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &grace
	}
	if s.SchedulerName == "" {
		s.SchedulerName = v1.DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	if s.EnableServiceLinks == nil {
		t := v1.DefaultEnableServiceLinks
		s.EnableServiceLinks = &t
	}
	for _, cs := range [][]v1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultContainer(&cs[i])
		}
	}
}

func defaultContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = imageref.DefaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	// A huge page limit without a request requests as much (the API
	// server's defaulting; admission and the pod cgroup count requests).
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok && isHugePages(name) {
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
}

// Validate checks what the agent needs of a defaulted pod: a DNS-1123
// subdomain name, a DNS-1123 label namespace, at least one container, and
// uniquely named (DNS-1123 label) containers with an image; then the values
// the API server would refuse (validate.go), with its messages.
func Validate(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
	}
	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container"))
	}
	names := map[string]bool{}
	check := func(p *field.Path, name, image string) {
		if name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(p.Child("name"), name, msg))
			}
			if names[name] {
				errs = append(errs, field.Duplicate(p.Child("name"), name))
			}
			names[name] = true
		}
		if strings.TrimSpace(image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	for i, c := range pod.Spec.InitContainers {
		check(spec.Child("initContainers").Index(i), c.Name, c.Image)
	}
	for i, c := range pod.Spec.Containers {
		check(spec.Child("containers").Index(i), c.Name, c.Image)
	}
	for i, c := range pod.Spec.EphemeralContainers {
		check(spec.Child("ephemeralContainers").Index(i), c.Name, c.Image)
	}
	errs = append(errs, validateMeta(pod, meta)...)
	return append(errs, validateSpecValues(&pod.Spec, spec)...)
}
