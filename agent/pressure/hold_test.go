package pressure

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// holdEvicted sets memory.high to memory.current in the pod cgroup of a
// pod evicted for memory at a hard threshold on cgroup v2, and only then;
// the eviction is handed on in every case.
func TestHoldEvicted(t *testing.T) {
	one, thirty := eviction.HardGracePeriod, int64(30)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	for name, tc := range map[string]struct {
		v1Memory bool
		e        eviction.Eviction
		want     string // memory.high after; "max": untouched
	}{
		"hard memory eviction on v2": {e: eviction.Eviction{Resource: v1.ResourceMemory, GracePeriod: &one}, want: "4096000"},
		"soft: the pod's grace kept": {e: eviction.Eviction{Resource: v1.ResourceMemory, GracePeriod: &thirty}, want: "max"},
		"pids":                       {e: eviction.Eviction{Resource: "pids", GracePeriod: &one}, want: "max"},
		"v1 memory":                  {v1Memory: true, e: eviction.Eviction{Resource: v1.ResourceMemory, GracePeriod: &one}, want: "max"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			layout, err := cgroups.NewLayout(cgroups.DriverSystemd, "/")
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, layout.Pod(cgroups.Burstable, "u-1"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for f, v := range map[string]string{"memory.current": "4096000\n", "memory.high": "max"} {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			h := &cgroups.Hierarchies{Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}, V1: map[string]*cgroups.Mount{}}
			if tc.v1Memory {
				h.V1["memory"] = &cgroups.Mount{Path: t.TempDir(), Root: "/", Version: 1}
			}
			s := &Signals{cfg: Config{Hierarchies: h, Layout: layout}}
			handed := 0
			evict := s.holdEvicted(func(context.Context, *v1.Pod, eviction.Eviction) error { handed++; return nil })
			if err := evict(context.Background(), pod, tc.e); err != nil || handed != 1 {
				t.Fatalf("evict: %v, handed on %d times", err, handed)
			}
			b, err := os.ReadFile(filepath.Join(dir, "memory.high"))
			if err != nil || string(b) != tc.want {
				t.Fatalf("memory.high %q %v, want %q", b, err, tc.want)
			}
		})
	}
}
