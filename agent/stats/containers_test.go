package stats

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainersOf(t *testing.T) {
	started := metav1.NewTime(time.Unix(100, 0))
	earlier := metav1.NewTime(time.Unix(50, 0))
	cases := map[string]struct {
		cs   v1.ContainerStatus
		want []Container
	}{
		"running after an OOM kill": {v1.ContainerStatus{Name: "app", Image: "img", ContainerID: "containerd://c2",
			State:                v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://c1", StartedAt: earlier, Reason: "OOMKilled"}}},
			[]Container{{Name: "app", ID: "c2", Image: "img", Running: true, StartTime: started.Time},
				{Name: "app", ID: "c1", Image: "img", StartTime: earlier.Time, OOMKilled: true}}},
		"waiting, never ran": {v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}, nil},
		"terminated without an id": {v1.ContainerStatus{Name: "app",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error"}}}, nil},
		"id without a scheme": {v1.ContainerStatus{Name: "app", ContainerID: "c3",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
			[]Container{{Name: "app", ID: "c3", Running: true, StartTime: started.Time}}},
	}
	for name, c := range cases {
		got := ContainersOf(&c.cs)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %+v, want %+v", name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: [%d] = %+v, want %+v", name, i, got[i], c.want[i])
			}
		}
	}
}
