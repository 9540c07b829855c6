package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func ctrPolicy(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }

func rule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

var (
	restartIn42   = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	restartNotIn0 = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)
	allIn42       = rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
)

func TestContainerShouldRestart(t *testing.T) {
	cases := map[string]struct {
		pod    v1.RestartPolicy
		policy *v1.ContainerRestartPolicy
		rules  []v1.ContainerRestartRule
		exit   int32
		want   bool
	}{
		// Pod policy alone.
		"pod Always, success":          {pod: v1.RestartPolicyAlways, exit: 0, want: true},
		"pod Always, failure":          {pod: v1.RestartPolicyAlways, exit: 1, want: true},
		"pod unset counts as Always":   {pod: "", exit: 0, want: true},
		"pod OnFailure, success":       {pod: v1.RestartPolicyOnFailure, exit: 0, want: false},
		"pod OnFailure, failure":       {pod: v1.RestartPolicyOnFailure, exit: 1, want: true},
		"pod Never, failure":           {pod: v1.RestartPolicyNever, exit: 1, want: false},
		"pod Never, success":           {pod: v1.RestartPolicyNever, exit: 0, want: false},
		"rules without policy ignored": {pod: v1.RestartPolicyNever, rules: []v1.ContainerRestartRule{restartIn42}, exit: 42, want: false},
		// Container policy overrides the pod's.
		"container Always in Never pod":       {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyAlways), exit: 0, want: true},
		"container Never in Always pod":       {pod: v1.RestartPolicyAlways, policy: ctrPolicy(v1.ContainerRestartPolicyNever), exit: 1, want: false},
		"container OnFailure, failure":        {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyOnFailure), exit: 1, want: true},
		"container OnFailure, success":        {pod: v1.RestartPolicyAlways, policy: ctrPolicy(v1.ContainerRestartPolicyOnFailure), exit: 0, want: false},
		"unknown container policy: pod's one": {pod: v1.RestartPolicyNever, policy: ctrPolicy("Sometimes"), exit: 1, want: false},
		// Rules first.
		"rule In matches":                  {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartIn42}, exit: 42, want: true},
		"rule In mismatch: policy Never":   {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartIn42}, exit: 1, want: false},
		"rule In mismatch: policy Always":  {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyAlways), rules: []v1.ContainerRestartRule{restartIn42}, exit: 1, want: true},
		"rule NotIn matches":               {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartNotIn0}, exit: 3, want: true},
		"rule NotIn mismatch":              {pod: v1.RestartPolicyAlways, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartNotIn0}, exit: 0, want: false},
		"second rule matches":              {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartIn42, restartNotIn0}, exit: 7, want: true},
		"RestartAllContainers restarts":    {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{allIn42, restartIn42}, exit: 42, want: true},
		"RestartAllContainers mismatch":    {pod: v1.RestartPolicyAlways, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{allIn42}, exit: 1, want: false},
		"rule without exitCodes":           {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}, exit: 1, want: false},
		"rule with unknown operator":       {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, "Maybe", 1)}, exit: 1, want: false},
		"sidecar policy Always, success":   {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyAlways), exit: 0, want: true},
		"rule In with empty values misses": {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn)}, exit: 0, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
			spec := &v1.PodSpec{RestartPolicy: tc.pod}
			if got := ContainerShouldRestart(c, spec, tc.exit); got != tc.want {
				t.Errorf("ContainerShouldRestart = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMayRestart(t *testing.T) {
	cases := map[string]struct {
		pod    v1.RestartPolicy
		policy *v1.ContainerRestartPolicy
		rules  []v1.ContainerRestartRule
		want   v1.ContainerRestartPolicy
		may    bool
	}{
		"pod Never":                           {pod: v1.RestartPolicyNever, want: v1.ContainerRestartPolicyNever},
		"pod OnFailure":                       {pod: v1.RestartPolicyOnFailure, want: v1.ContainerRestartPolicyOnFailure, may: true},
		"pod unset":                           {want: v1.ContainerRestartPolicyAlways, may: true},
		"container Never in Always pod":       {pod: v1.RestartPolicyAlways, policy: ctrPolicy(v1.ContainerRestartPolicyNever), want: v1.ContainerRestartPolicyNever},
		"container Never with a Restart rule": {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{restartIn42}, want: v1.ContainerRestartPolicyNever, may: true},
		"container Never, RestartAll only":    {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyNever), rules: []v1.ContainerRestartRule{allIn42}, want: v1.ContainerRestartPolicyNever},
		"rules without policy ignored":        {pod: v1.RestartPolicyNever, rules: []v1.ContainerRestartRule{restartIn42}, want: v1.ContainerRestartPolicyNever},
		"container Always in Never pod":       {pod: v1.RestartPolicyNever, policy: ctrPolicy(v1.ContainerRestartPolicyAlways), want: v1.ContainerRestartPolicyAlways, may: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
			spec := &v1.PodSpec{RestartPolicy: tc.pod}
			if got := EffectiveRestartPolicy(c, spec); got != tc.want {
				t.Errorf("EffectiveRestartPolicy = %q, want %q", got, tc.want)
			}
			if got := MayRestart(c, spec); got != tc.may {
				t.Errorf("MayRestart = %v, want %v", got, tc.may)
			}
		})
	}
}

func TestRestartsAll(t *testing.T) {
	never := ctrPolicy(v1.ContainerRestartPolicyNever)
	cases := map[string]struct {
		policy *v1.ContainerRestartPolicy
		rules  []v1.ContainerRestartRule
		exit   int32
		want   bool
	}{
		"first matching rule is RestartAllContainers": {policy: never, rules: []v1.ContainerRestartRule{allIn42}, exit: 42, want: true},
		"no rule matches":              {policy: never, rules: []v1.ContainerRestartRule{allIn42}, exit: 1},
		"an earlier Restart rule wins": {policy: never, rules: []v1.ContainerRestartRule{restartIn42, allIn42}, exit: 42},
		"NotIn":                        {policy: never, rules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, exit: 137, want: true},
		"rules without policy ignored": {rules: []v1.ContainerRestartRule{allIn42}, exit: 42},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
			if got := RestartsAll(c, tc.exit); got != tc.want {
				t.Errorf("RestartsAll = %v, want %v", got, tc.want)
			}
		})
	}
	if MayRestartAll(&v1.PodSpec{Containers: []v1.Container{{Name: "a", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{restartIn42}}}}) {
		t.Error("MayRestartAll with only a Restart rule = true")
	}
	if !MayRestartAll(&v1.PodSpec{InitContainers: []v1.Container{{Name: "i", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{allIn42}}}}) {
		t.Error("MayRestartAll with a RestartAllContainers rule on an init container = false")
	}
}
