package live

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOOMTracker(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	oom := func(id string) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{Reason: ReasonOOMKilled, ExitCode: 137, ContainerID: id}
	}
	tr := NewOOMTracker()
	st := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "app", State: v1.ContainerState{Terminated: oom("c1")}},
		{Name: "ok", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}},
	}}
	got := tr.Observe(pod, st)
	want := []OOMKill{{Pod: &PodRef{Namespace: "ns", Name: "p", UID: "u1"}, Container: "app", ContainerID: "c1", Source: "status"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first: %+v, want %+v", got, want)
	}
	if again := tr.Observe(pod, st); len(again) != 0 {
		t.Fatalf("the same kill twice: %+v", again)
	}
	// Restarted: the killed instance is now the last state, a new one was killed too.
	st.ContainerStatuses[0] = v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: oom("c2")},
		LastTerminationState: v1.ContainerState{Terminated: oom("c1")}}
	if got := tr.Observe(pod, st); len(got) != 1 || got[0].ContainerID != "c2" {
		t.Fatalf("after restart: %+v, want c2 only", got)
	}
	if n := tr.Count("u1"); n != 2 {
		t.Errorf("count = %d, want 2", n)
	}
	tr.Forget("u1")
	if n := tr.Count("u1"); n != 0 {
		t.Errorf("count after forget = %d", n)
	}
}

func TestConditionChanges(t *testing.T) {
	watched := []string{"MemoryPressure", "DiskPressure", "PIDPressure"}
	got := ConditionChanges(watched, []string{"DiskPressure"}, []string{"MemoryPressure"})
	want := []ConditionChange{{Type: "MemoryPressure", Status: "True"}, {Type: "DiskPressure", Status: "False"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := ConditionChanges(watched, []string{"PIDPressure"}, []string{"PIDPressure"}); got != nil {
		t.Errorf("no change gave %+v", got)
	}
}
