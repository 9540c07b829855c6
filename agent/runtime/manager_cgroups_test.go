package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/cgroups"
)

// layoutManager is a CgroupManager that only names cgroups.
type layoutManager struct {
	CgroupManager
	l cgroups.Layout
}

func (m layoutManager) PodCgroup(class cgroups.QOSClass, uid string) string {
	return m.l.Pod(class, uid)
}
func (m layoutManager) Layout() cgroups.Layout { return m.l }

// MemoryUsage reads the pod's and its containers' cgroups where each
// driver puts them: <pod>/<id> under cgroupfs, <pod slice>/cri-containerd-<id>.scope under systemd.
func TestMemoryUsageLayouts(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}}}}}}
	pod.UID = "0a1b-2c3d"
	for _, driver := range []cgroups.Driver{cgroups.DriverCgroupfs, cgroups.DriverSystemd} {
		t.Run(string(driver), func(t *testing.T) {
			l, err := cgroups.NewLayout(driver, "/")
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			podCg := l.Pod(cgroups.Burstable, string(pod.UID))
			for cg, usage := range map[string]int{podCg: 3 << 20, l.Container(podCg, "c1"): 2 << 20} {
				d := filepath.Join(root, cg)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, v := range map[string]string{"memory.current": strconv.Itoa(usage), "memory.stat": "anon 0\nfile 0\ninactive_file 0"} {
					if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu io memory pids\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := cgroups.NewReader(&cgroups.Hierarchies{Mode: cgroups.Unified,
				Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}})
			if err != nil {
				t.Fatal(err)
			}
			a := CgroupsAdapter{Manager: layoutManager{l: l}, Reader: r}
			podUsage, ctrs, err := a.MemoryUsage(t.Context(), pod, []string{"c1"})
			if err != nil {
				t.Fatal(err)
			}
			if podUsage != 3<<20 || ctrs["c1"] != 2<<20 {
				t.Fatalf("usage: pod %d, containers %v", podUsage, ctrs)
			}
		})
	}
}
