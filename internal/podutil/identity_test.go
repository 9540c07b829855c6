package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestCritical(t *testing.T) {
	prio := func(v int32) *int32 { return &v }
	cases := map[string]struct {
		class        string
		priority     *int32
		annotations  map[string]string
		static       bool
		mirror       bool
		critical     bool
		nodeCritical bool
	}{
		"api pod with class and resolved priority":  {SystemNodeCritical, prio(SystemNodeCriticalPriority), nil, false, false, true, true},
		"api pod with class, priority at threshold": {SystemNodeCritical, prio(SystemCriticalPriority), nil, false, false, true, true},
		"priority just below the threshold":         {"", prio(SystemCriticalPriority - 1), nil, false, false, false, false},
		"class without priority (not admitted)":     {SystemNodeCritical, nil, nil, false, false, false, false},
		"class with low priority":                   {SystemNodeCritical, prio(1000), nil, false, false, false, false},
		"static pod naming the class":               {SystemNodeCritical, nil, map[string]string{AnnotationConfigSource: SourceFile}, true, false, true, true},
		"mirror pod naming the class":               {SystemNodeCritical, nil, map[string]string{AnnotationConfigMirror: "abc"}, false, true, true, true},
		"mirror with an empty hash is a mirror":     {"", nil, map[string]string{AnnotationConfigMirror: ""}, false, true, true, false},
		"api source annotation is not static":       {SystemNodeCritical, nil, map[string]string{AnnotationConfigSource: SourceAPI}, false, false, false, false},
		"empty source annotation is static":         {"", nil, map[string]string{AnnotationConfigSource: ""}, true, false, true, false},
		"cluster critical is critical not node":     {SystemClusterCritical, prio(SystemCriticalPriority), nil, false, false, true, false},
		"high priority without the class":           {"", prio(SystemNodeCriticalPriority), nil, false, false, true, false},
		"static pod without the class":              {"", nil, map[string]string{AnnotationConfigSource: SourceHTTP}, true, false, true, false},
		"other annotations only":                    {"", nil, map[string]string{AnnotationConfigHash: "h"}, false, false, false, false},
		"ordinary pod":                              {"", nil, nil, false, false, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{PriorityClassName: tc.class, Priority: tc.priority}}
			p.Annotations = tc.annotations
			if got := IsStatic(p); got != tc.static {
				t.Errorf("IsStatic = %v, want %v", got, tc.static)
			}
			if got := IsMirror(p); got != tc.mirror {
				t.Errorf("IsMirror = %v, want %v", got, tc.mirror)
			}
			if got := IsCritical(p); got != tc.critical {
				t.Errorf("IsCritical = %v, want %v", got, tc.critical)
			}
			if got := IsNodeCritical(p); got != tc.nodeCritical {
				t.Errorf("IsNodeCritical = %v, want %v", got, tc.nodeCritical)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	cases := map[v1.PodPhase]bool{
		v1.PodSucceeded: true, v1.PodFailed: true,
		v1.PodPending: false, v1.PodRunning: false, v1.PodUnknown: false, "": false,
	}
	for phase, want := range cases {
		if got := IsTerminal(phase); got != want {
			t.Errorf("IsTerminal(%q) = %v, want %v", phase, got, want)
		}
	}
}

func TestFullName(t *testing.T) {
	p := &v1.Pod{}
	p.Namespace, p.Name = "kube-system", "etcd-node-1"
	if got := FullName(p); got != "kube-system/etcd-node-1" {
		t.Errorf("FullName = %q", got)
	}
}
