package oomwatch

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kernelet/kernelet/oom"
)

func TestReclaimPodNames(t *testing.T) {
	now := time.Unix(1000, 0)
	web := oom.PodRef{Namespace: "ns", Name: "web", UID: "abc"}
	db := oom.PodRef{Namespace: "ns", Name: "db", UID: "def"}
	known := map[string]oom.PodRef{"abc": web}
	reads := 0
	n := &podNames{now: func() time.Time { return now }, list: func() map[string]oom.PodRef {
		reads++
		return maps.Clone(known)
	}}

	for name, tc := range map[string]struct{ cg, ns, pod string }{
		"a pod's container":   {"/kubepods/burstable/podabc/ctr1", "ns", "web"},
		"the pod cgroup":      {"/kubepods/burstable/podabc", "ns", "web"},
		"outside pods":        {"/system.slice/sshd.service", "", ""},
		"unresolved cgroup":   {"", "", ""},
		"a pod not known yet": {"/kubepods/besteffort/poddef/ctr2", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			ns, pod := n.labels(tc.cg)
			if ns != tc.ns || pod != tc.pod {
				t.Fatalf("labels %q/%q, want %q/%q", ns, pod, tc.ns, tc.pod)
			}
		})
	}
	if reads != 1 {
		t.Fatalf("%d reads of the pods within %v, want 1", reads, reclaimPodsRefresh)
	}
	// The new pod is found once the refresh interval passed.
	known["def"] = db
	now = now.Add(reclaimPodsRefresh)
	if ns, pod := n.labels("/kubepods/besteffort/poddef/ctr2"); ns != "ns" || pod != "db" {
		t.Fatalf("after refresh: %q/%q", ns, pod)
	}
	// web is gone: its series is dropped, once.
	delete(known, "abc")
	if g := n.gone(); !slices.Equal(g, []oom.PodRef{web}) {
		t.Fatalf("gone %v, want [web]", g)
	}
	if g := n.gone(); len(g) != 0 {
		t.Fatalf("gone again %v", g)
	}
}
