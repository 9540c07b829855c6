package podutil

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// ContainerShouldRestart reports whether container c of a pod with spec,
// having exited with exitCode, is to run again — kubelet's rule with the
// ContainerRestartRules feature (on by default since v1.35):
//   - when c has its own restartPolicy, its restartPolicyRules are tried
//     in order and the first whose exitCodes match decides: action
//     Restart restarts it, and so does action RestartAllContainers
//     (RestartAllContainersOnContainerExits, on by default since v1.36:
//     the whole pod restarts in place, see RestartsAll); another action
//     falls through to the policy;
//   - then c's own restartPolicy (Always, OnFailure: exitCode ≠ 0, Never);
//   - else the pod's restartPolicy ("" counts as Always, the API default).
//
// Rules without a container restartPolicy are not looked at: the API
// requires the policy whenever there are rules. It is the decision for an
// exited container, regular or init; a sidecar (restartPolicy Always)
// always restarts.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if r, ok := MatchRestartRule(c, exitCode); ok {
			switch r.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
	}
	switch EffectiveRestartPolicy(c, spec) {
	case v1.ContainerRestartPolicyNever:
		return false
	case v1.ContainerRestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// MatchRestartRule returns the first of c's restartPolicyRules whose
// exitCodes match exitCode (operator In: it is one of the values; NotIn:
// it is none of them), and whether there is one. A rule without exitCodes
// or with another operator matches nothing.
func MatchRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, r := range c.RestartPolicyRules {
		if r.ExitCodes == nil {
			continue
		}
		in := slices.Contains(r.ExitCodes.Values, exitCode)
		switch r.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return r, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return r, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// RestartsAll reports whether container c having exited with exitCode
// restarts every container of its pod in place: c has its own
// restartPolicy and the first of its restartPolicyRules whose exitCodes
// match has action RestartAllContainers.
func RestartsAll(c *v1.Container, exitCode int32) bool {
	if c.RestartPolicy == nil {
		return false
	}
	r, ok := MatchRestartRule(c, exitCode)
	return ok && r.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// MayRestartAll reports whether a container of spec (regular or init)
// has a restart rule with action RestartAllContainers: only such pods
// carry the AllContainersRestarting condition (kubelet's
// AllContainersCouldRestart).
func MayRestartAll(spec *v1.PodSpec) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, r := range list[i].RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// EffectiveRestartPolicy is the restart policy that applies to container c
// of a pod with spec when no rule decides: c's own restartPolicy when set,
// else the pod's ("" and unknown values count as Always, as kubelet's).
// Kubelet applies it alone, without the rules, to a container killed
// while running (a failed liveness or startup probe): there is no exit
// code to match then.
func EffectiveRestartPolicy(c *v1.Container, spec *v1.PodSpec) v1.ContainerRestartPolicy {
	if c.RestartPolicy != nil {
		switch p := *c.RestartPolicy; p {
		case v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever:
			return p
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return v1.ContainerRestartPolicyNever
	case v1.RestartPolicyOnFailure:
		return v1.ContainerRestartPolicyOnFailure
	}
	return v1.ContainerRestartPolicyAlways
}

// MayRestart reports whether container c of a pod with spec can ever be
// restarted after it ran: its effective restart policy is not Never, or
// it has its own restartPolicy and a rule with action Restart (kubelet's
// IsContainerRestartable).
func MayRestart(c *v1.Container, spec *v1.PodSpec) bool {
	if c.RestartPolicy != nil {
		for _, r := range c.RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestart {
				return true
			}
		}
	}
	return EffectiveRestartPolicy(c, spec) != v1.ContainerRestartPolicyNever
}
