package sources

import (
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks of the API server's pod validation that matter on a node,
// reimplemented for static pods (which never pass through an API server):
// the values an API pod could not have, with the API server's messages.

// validateMeta checks labels and annotations as the API server does.
func validateMeta(pod *v1.Pod, meta *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(pod.Labels, meta.Child("labels"))
	return append(errs, apivalidation.ValidateAnnotations(pod.Annotations, meta.Child("annotations"))...)
}

// validateSpecValues checks the pod-level numbers and enums, the volumes and
// every container's ports, resources, pull policy, volume mounts, restart
// policy and restart rules.
func validateSpecValues(spec *v1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, p.Child("terminationGracePeriodSeconds"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	switch spec.RestartPolicy {
	case "", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever: // "": defaulted to Always
	default:
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), spec.RestartPolicy,
			[]v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}))
	}
	switch spec.DNSPolicy {
	case "", v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(p.Child("dnsPolicy"), spec.DNSPolicy,
			[]v1.DNSPolicy{v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone}))
	}
	errs = append(errs, validateHostnames(spec, p)...)
	volumes, vErrs := validateVolumeNames(spec.Volumes, p.Child("volumes"))
	errs = append(errs, vErrs...)
	for i := range spec.InitContainers {
		errs = append(errs, validateContainerValues(&spec.InitContainers[i], volumes, p.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainerValues(&spec.Containers[i], volumes, p.Child("containers").Index(i))...)
	}
	return errs
}

// validateHostnames checks hostname and subdomain (DNS-1123 labels) and
// hostnameOverride: a DNS-1123 subdomain of at most 64 characters, not with
// setHostnameAsFQDN, not on the host network.
func validateHostnames(spec *v1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(v string, f *field.Path) {
		for _, msg := range validation.IsDNS1123Label(v) {
			errs = append(errs, field.Invalid(f, v, msg))
		}
	}
	if spec.Hostname != "" {
		label(spec.Hostname, p.Child("hostname"))
	}
	if spec.Subdomain != "" {
		label(spec.Subdomain, p.Child("subdomain"))
	}
	o := spec.HostnameOverride
	if o == nil {
		return errs
	}
	f := p.Child("hostnameOverride")
	if fqdn := spec.SetHostnameAsFQDN; fqdn != nil && *fqdn {
		errs = append(errs, field.Forbidden(f, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(f, "may not be specified when hostNetwork is true"))
	}
	if len(*o) > 64 {
		errs = append(errs, field.TooLong(f, "", 64))
	}
	for _, msg := range validation.IsDNS1123Subdomain(*o) {
		errs = append(errs, field.Invalid(f, *o, msg))
	}
	return errs
}

// The container restart policies and rule actions and operators the API
// server accepts (v1.37, ContainerRestartRules and
// RestartAllContainersOnContainerExits on), in its sorted order.
var (
	containerRestartPolicies = []v1.ContainerRestartPolicy{v1.ContainerRestartPolicyAlways,
		v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure}
	restartRuleActions = []v1.ContainerRestartRuleAction{v1.ContainerRestartRuleActionRestart,
		v1.ContainerRestartRuleActionRestartAllContainers}
	restartRuleOperators = []v1.ContainerRestartRuleOnExitCodesOperator{v1.ContainerRestartRuleOnExitCodesOpIn,
		v1.ContainerRestartRuleOnExitCodesOpNotIn}
)

// Bounds of restart rules (the API server's).
const (
	maxRestartRules     = 20
	maxRestartExitCodes = 255
)

// validateRestartPolicy checks a container's restartPolicy and
// restartPolicyRules as the API server does for init, sidecar and regular
// containers: rules need a restartPolicy; at most 20 rules, each with an
// action, exitCodes with an operator and at most 255 values. Whether
// kernelet runs a valid rule is admission's question
// (podconfig.ValidatePodForRuntime).
func validateRestartPolicy(c *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0:
		errs = append(errs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	case c.RestartPolicy != nil && !slices.Contains(containerRestartPolicies, *c.RestartPolicy):
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, containerRestartPolicies))
	}
	rp := p.Child("restartPolicyRules")
	if n := len(c.RestartPolicyRules); n > maxRestartRules {
		errs = append(errs, field.TooMany(rp, n, maxRestartRules))
	}
	for i, r := range c.RestartPolicyRules {
		ip := rp.Index(i)
		if !slices.Contains(restartRuleActions, r.Action) {
			errs = append(errs, field.NotSupported(ip.Child("action"), r.Action, restartRuleActions))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(ip.Child("exitCodes"), "must be specified"))
			continue
		}
		if !slices.Contains(restartRuleOperators, r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(ip.Child("exitCodes", "operator"), r.ExitCodes.Operator, restartRuleOperators))
		}
		if n := len(r.ExitCodes.Values); n > maxRestartExitCodes {
			errs = append(errs, field.TooMany(ip.Child("exitCodes", "values"), n, maxRestartExitCodes))
		}
	}
	return errs
}

// validateVolumeNames checks that volume names are unique DNS-1123 labels and
// returns the set of them.
func validateVolumeNames(vols []v1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range vols {
		np := p.Index(i).Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(np, ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(np, v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(np, v.Name, msg))
			}
		}
		names.Insert(v.Name)
	}
	return names, errs
}

// validateContainerValues checks one container's ports, resources, image pull
// policy, volume mounts, restart policy and restart rules.
func validateContainerValues(c *v1.Container, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case "", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}))
		}
	}
	switch c.ImagePullPolicy {
	case "", v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}))
	}
	errs = append(errs, validateResources(c.Resources, p.Child("resources"))...)
	errs = append(errs, validateRestartPolicy(c, p)...)
	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
	}
	return errs
}

// validateResources checks that quantities are not negative, that no
// request exceeds its limit and the API server's huge page rules: a huge
// page request needs an equal limit, each amount is a multiple of its page
// size, and huge pages come with a cpu or memory request or limit.
func validateResources(r v1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	hugePages, cpuOrMemory := false, false
	for name, q := range r.Limits {
		lp := p.Child("limits").Key(string(name))
		errs = append(errs, nonNegative(q, lp)...)
		errs = append(errs, hugePageValue(name, q, lp)...)
		hugePages = hugePages || isHugePages(name)
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
	}
	for name, q := range r.Requests {
		rp := p.Child("requests").Key(string(name))
		errs = append(errs, nonNegative(q, rp)...)
		l, ok := r.Limits[name]
		switch {
		case isHugePages(name) && ok && q.Cmp(l) != 0:
			errs = append(errs, field.Invalid(p.Child("requests"), q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, l.String())))
		case isHugePages(name) && !ok:
			errs = append(errs, field.Required(p.Child("limits"), "Limit must be set for non overcommitable resources"))
		case ok && q.Cmp(l) > 0:
			errs = append(errs, field.Invalid(rp, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, l.String())))
		}
		errs = append(errs, hugePageValue(name, q, rp)...)
		hugePages = hugePages || isHugePages(name)
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	return errs
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// hugePageValue checks that a huge page amount is a multiple of its page
// size (the API server's message).
func hugePageValue(name v1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !ok {
		return nil
	}
	ps, err := resource.ParseQuantity(size)
	if err != nil || ps.Value() <= 0 {
		return field.ErrorList{field.Invalid(p, string(name), "must be a valid hugepages resource name")}
	}
	if q.Value()%ps.Value() != 0 {
		return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
	}
	return nil
}

func nonNegative(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}
