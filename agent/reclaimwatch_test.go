package agent

import (
	"testing"

	"github.com/kernelet/kernelet/oom"
)

func TestReclaimStallLabels(t *testing.T) {
	lookup := func(cg string) (oom.PodRef, bool) {
		if cg == "/kubepods/burstable/podabc/ctr1" {
			return oom.PodRef{Namespace: "ns", Name: "web", UID: "abc", Container: "app"}, true
		}
		return oom.PodRef{}, false
	}
	for name, tc := range map[string]struct{ cg, ns, pod string }{
		"a pod's container": {"/kubepods/burstable/podabc/ctr1", "ns", "web"},
		"outside pods":      {"/system.slice/sshd.service", "", ""},
		"unresolved cgroup": {"", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			ns, pod := reclaimStallLabels(tc.cg, lookup)
			if ns != tc.ns || pod != tc.pod {
				t.Fatalf("labels %q/%q, want %q/%q", ns, pod, tc.ns, tc.pod)
			}
		})
	}
}
