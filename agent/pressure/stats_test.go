package pressure

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
)

func TestKubepodsCapacity(t *testing.T) {
	limited := cgroups.Value{V: 512 << 20, Known: true}
	unlimited := cgroups.Value{V: cgroups.Unlimited, Known: true}
	v1Unlimited := cgroups.Value{V: 9223372036854771712, Known: true} // v1's "no limit"
	for _, tc := range []struct {
		limit cgroups.Value
		node  int64
		want  int64
	}{
		{limited, 8 << 30, 512 << 20},
		{limited, 0, 512 << 20},
		{unlimited, 8 << 30, 1 << 30},
		{v1Unlimited, 8 << 30, 1 << 30},
		{cgroups.Value{}, 8 << 30, 1 << 30},
	} {
		if got := KubepodsCapacity(tc.limit, tc.node, 1<<30); got != tc.want {
			t.Errorf("KubepodsCapacity(%v, %d) = %d, want %d", tc.limit, tc.node, got, tc.want)
		}
	}
}

// The eviction stats of a pod come from its cgroup and its running
// containers' where each driver puts them (the pod slice and
// cri-containerd-<id>.scope under systemd).
func TestPodStatsLayouts(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}}}}}}
	pod.UID = "0a1b-2c3d"
	st := &runtime.PodStatus{UID: pod.UID, Containers: []*runtime.ContainerStatus{
		{ID: "c2", Name: "app", State: runtime.ContainerRunning}, {ID: "c1", Name: "app", State: runtime.ContainerExited}}}
	for _, driver := range []cgroups.Driver{cgroups.DriverCgroupfs, cgroups.DriverSystemd} {
		t.Run(string(driver), func(t *testing.T) {
			l, err := cgroups.NewLayout(driver, "/")
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			podCg := l.Pod(cgroups.Burstable, string(pod.UID))
			for cg, usage := range map[string]string{podCg: "3145728", l.Container(podCg, "c2"): "2097152"} {
				d := filepath.Join(root, cg)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, v := range map[string]string{"memory.current": usage, "memory.stat": "anon 0\nfile 0\ninactive_file 0", "pids.current": "3"} {
					if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu io memory pids\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := cgroups.NewReader(&cgroups.Hierarchies{Mode: cgroups.Unified, Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}})
			if err != nil {
				t.Fatal(err)
			}
			s := &nodeStats{r: r, kubepods: l.Kubepods(), layout: l, status: func(types.UID) *runtime.PodStatus { return st }}
			ps, ok := s.pod(t.Context(), pod)
			if !ok || ps.MemoryWorkingSet != 3<<20 || ps.Containers["app"] != 2<<20 {
				t.Fatalf("pod stats %+v, %v: want the pod's 3 MiB and the running app's 2 MiB", ps, ok)
			}
		})
	}
}
