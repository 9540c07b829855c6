package node

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)

func fullCapacity() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
	}
}

func readyRuntime(at time.Time) RuntimeState {
	return RuntimeState{Name: "containerd", Version: "v1.7.2", LastSync: at, Conditions: []RuntimeCondition{
		{Type: RuntimeReadyCondition, Status: true}, {Type: NetworkReadyCondition, Status: true}}}
}

func TestReadyError(t *testing.T) {
	netDown := readyRuntime(t0)
	netDown.Conditions[1] = RuntimeCondition{Type: NetworkReadyCondition, Reason: "NetworkPluginNotReady",
		Message: "Network plugin returns error: cni plugin not initialized"}
	rtDown := readyRuntime(t0)
	rtDown.Conditions[0] = RuntimeCondition{Type: RuntimeReadyCondition, Reason: "ContainerdNotReady", Message: "shim down"}
	pleg := errors.New("PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s")
	noPods := fullCapacity()
	delete(noPods, v1.ResourcePods)
	delete(noPods, v1.ResourceMemory)
	for name, tc := range map[string]struct {
		in       Inputs
		capacity v1.ResourceList
		want     string // "" = ready
	}{
		"ready": {in: Inputs{Runtime: readyRuntime(t0)}},
		"runtime never answered": {in: Inputs{},
			want: "container runtime status check may not have completed yet"},
		"runtime down": {in: Inputs{Runtime: readyRuntime(t0.Add(-RuntimeDownAfter))},
			want: "container runtime is down"},
		"runtime answered 29s ago": {in: Inputs{Runtime: readyRuntime(t0.Add(-29 * time.Second))}},
		"network not ready": {in: Inputs{Runtime: netDown},
			want: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"},
		"runtime not ready": {in: Inputs{Runtime: rtDown},
			want: "container runtime not ready: RuntimeReady=false reason:ContainerdNotReady message:shim down"},
		"pleg": {in: Inputs{Runtime: readyRuntime(t0), HealthErrors: []error{pleg}},
			want: "PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"},
		"several, as kubelet's aggregate": {in: Inputs{Runtime: netDown, HealthErrors: []error{pleg}},
			want: "[PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s, container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized]"},
		"missing capacity": {in: Inputs{Runtime: readyRuntime(t0)}, capacity: noPods,
			want: "missing node capacity for resources: memory, pods"},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.capacity
			if c == nil {
				c = fullCapacity()
			}
			err := ReadyError(tc.in, c, t0)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("ReadyError = %q\nwant         %q", got, tc.want)
			}
		})
	}
}

func cond(st *v1.NodeStatus, typ v1.NodeConditionType) *v1.NodeCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestConditions(t *testing.T) {
	t1 := t0.Add(10 * time.Second)
	ready := Inputs{Runtime: readyRuntime(t0)}
	for name, tc := range map[string]struct {
		prev       []v1.NodeCondition
		in         Inputs
		wantEvents []string
		// want: type → status, reason, message, transition time
		want map[v1.NodeConditionType][3]string
		// transitionAt: type → expected lastTransitionTime
		transitionAt map[v1.NodeConditionType]time.Time
	}{
		"first computation": {in: ready,
			wantEvents: []string{EventNodeHasSufficientMemory, EventNodeHasNoDiskPressure, EventNodeHasSufficientPID, EventNodeReady},
			want: map[v1.NodeConditionType][3]string{
				v1.NodeReady:          {"True", "KubeletReady", "kubelet is posting ready status"},
				v1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
				v1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
				v1.NodePIDPressure:    {"False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			},
			transitionAt: map[v1.NodeConditionType]time.Time{v1.NodeReady: t1, v1.NodePIDPressure: t1}},
		"pressure everywhere": {in: Inputs{Runtime: readyRuntime(t0), MemoryPressure: true, DiskPressure: true, PIDPressure: true},
			prev:       steadyConditions(),
			wantEvents: []string{EventNodeHasInsufficientMemory, EventNodeHasDiskPressure, EventNodeHasInsufficientPID},
			want: map[v1.NodeConditionType][3]string{
				v1.NodeMemoryPressure: {"True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
				v1.NodeDiskPressure:   {"True", "KubeletHasDiskPressure", "kubelet has disk pressure"},
				v1.NodePIDPressure:    {"True", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
			},
			transitionAt: map[v1.NodeConditionType]time.Time{v1.NodeMemoryPressure: t1, v1.NodeReady: t0}},
		"unchanged keeps transition time": {in: ready, prev: steadyConditions(),
			transitionAt: map[v1.NodeConditionType]time.Time{v1.NodeReady: t0, v1.NodeMemoryPressure: t0}},
		"becomes not ready": {in: Inputs{}, prev: steadyConditions(), wantEvents: []string{EventNodeNotReady},
			want: map[v1.NodeConditionType][3]string{
				v1.NodeReady: {"False", "KubeletNotReady", "container runtime status check may not have completed yet"}},
			transitionAt: map[v1.NodeConditionType]time.Time{v1.NodeReady: t1}},
		"Unknown from the node controller becomes ready": {in: ready,
			prev:         withReady(steadyConditions(), v1.ConditionUnknown),
			wantEvents:   []string{EventNodeReady},
			transitionAt: map[v1.NodeConditionType]time.Time{v1.NodeReady: t1}},
	} {
		t.Run(name, func(t *testing.T) {
			st := &v1.NodeStatus{Capacity: fullCapacity(), Conditions: append(tc.prev,
				v1.NodeCondition{Type: "NetworkUnavailable", Status: v1.ConditionFalse, Reason: "RouteCreated"})}
			events := Conditions(st, tc.in, t1)
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events = %v, want %v", events, tc.wantEvents)
			}
			if c := cond(st, "NetworkUnavailable"); c == nil || c.Reason != "RouteCreated" {
				t.Errorf("other condition not kept: %+v", c)
			}
			for typ, w := range tc.want {
				c := cond(st, typ)
				if c == nil || string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] {
					t.Errorf("%s = %+v, want %v", typ, c, w)
				}
			}
			for typ, at := range tc.transitionAt {
				if c := cond(st, typ); c == nil || !c.LastTransitionTime.Time.Equal(at) || !c.LastHeartbeatTime.Time.Equal(t1) {
					t.Errorf("%s times = %+v, want transition %v, heartbeat %v", typ, c, at, t1)
				}
			}
		})
	}
}

func TestConditionsOrder(t *testing.T) {
	st := &v1.NodeStatus{Capacity: fullCapacity()}
	Conditions(st, Inputs{Runtime: readyRuntime(t0)}, t0)
	var got []v1.NodeConditionType
	for _, c := range st.Conditions {
		got = append(got, c.Type)
	}
	want := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

// steadyConditions are the four conditions of a healthy node since t0.
func steadyConditions() []v1.NodeCondition {
	st := &v1.NodeStatus{Capacity: fullCapacity()}
	Conditions(st, Inputs{Runtime: readyRuntime(t0)}, t0)
	return st.Conditions
}

func withReady(cs []v1.NodeCondition, s v1.ConditionStatus) []v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == v1.NodeReady {
			cs[i].Status, cs[i].Reason, cs[i].LastTransitionTime = s, "NodeStatusUnknown", metav1.NewTime(t0)
		}
	}
	return cs
}
