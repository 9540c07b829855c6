package pods

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func cond(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s}
}

func TestMergeStatus(t *testing.T) {
	start := metav1.Unix(100, 0)
	for name, tc := range map[string]struct {
		api, ours v1.PodStatus
		gen       int64
		want      v1.PodStatus
	}{
		"ours replaces the owned conditions, PodScheduled is kept": {
			api: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{
				cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionFalse)}},
			ours: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}},
			want: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				cond(v1.PodScheduled, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue)}},
		},
		"a terminal phase never regresses": {
			api:  v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			ours: v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "low on memory"},
		},
		"a terminal phase never changes": {
			api:  v1.PodStatus{Phase: v1.PodSucceeded, Reason: "Completed"},
			ours: v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfexample.com/resource", Message: "Node didn't have enough resource"},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Reason: "Completed"},
		},
		"a terminal phase of ours wins": {
			api:  v1.PodStatus{Phase: v1.PodRunning},
			ours: v1.PodStatus{Phase: v1.PodSucceeded},
			want: v1.PodStatus{Phase: v1.PodSucceeded},
		},
		"the volumes' health is kept until ours has some": {
			api:  v1.PodStatus{Phase: v1.PodRunning, VolumeHealth: []v1.PodVolumeHealth{{Name: "old"}}},
			ours: v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodRunning, VolumeHealth: []v1.PodVolumeHealth{{Name: "old"}}},
		},
		"our volumes' health wins": {
			api:  v1.PodStatus{Phase: v1.PodRunning, VolumeHealth: []v1.PodVolumeHealth{{Name: "old"}}},
			ours: v1.PodStatus{Phase: v1.PodRunning, VolumeHealth: []v1.PodVolumeHealth{{Name: "new"}}},
			want: v1.PodStatus{Phase: v1.PodRunning, VolumeHealth: []v1.PodVolumeHealth{{Name: "new"}}},
		},
		"the scheduler's DRA statuses are the API server's": {
			api: v1.PodStatus{Phase: v1.PodPending, ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "c"},
				NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "n"}}},
			ours: v1.PodStatus{Phase: v1.PodRunning, ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "stale"}},
			want: v1.PodStatus{Phase: v1.PodRunning, ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "c"},
				NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "n"}}},
		},
		"DisruptionTarget of a controller is kept": {
			api:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.DisruptionTarget, v1.ConditionTrue)}},
			ours: v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.DisruptionTarget, v1.ConditionTrue)}},
		},
		"start time and observed generation": {
			api:  v1.PodStatus{Phase: v1.PodPending, StartTime: &start},
			ours: v1.PodStatus{Phase: v1.PodPending},
			gen:  3,
			want: v1.PodStatus{Phase: v1.PodPending, StartTime: &start, ObservedGeneration: 3},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := MergeStatus(tc.api, tc.ours, tc.gen)
			if !StatusEqual(got, tc.want) {
				t.Errorf("MergeStatus:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestStatusEqualIgnoresConditionOrderAndProbeTimes(t *testing.T) {
	a := v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond(v1.PodInitialized, v1.ConditionTrue)}}
	b := v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodInitialized, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue)}}
	b.Conditions[1].LastProbeTime = metav1.Unix(5, 0)
	if !StatusEqual(a, b) {
		t.Error("same conditions in another order are not equal")
	}
	b.Conditions[1].Status = v1.ConditionFalse
	if StatusEqual(a, b) {
		t.Error("a changed condition is equal")
	}
}

func TestStatusPatchAppliesAndCarriesUID(t *testing.T) {
	api := v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue)}}
	next := MergeStatus(api, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.5",
		PodIPs:     []v1.PodIP{{IP: "10.0.0.5"}},
		Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(7, 0)}}}}}, 0)
	patch, err := StatusPatch("uid-1", api, next)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	if md, _ := m["metadata"].(map[string]any); md["uid"] != "uid-1" {
		t.Errorf("patch has no UID precondition: %s", patch)
	}
	orig, _ := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Status: api})
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !StatusEqual(got.Status, next) {
		t.Errorf("patched status:\n got %+v\nwant %+v", got.Status, next)
	}
}

func TestApplyReadinessGates(t *testing.T) {
	gates := []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	ready := func(extra ...v1.PodCondition) v1.PodStatus {
		return v1.PodStatus{Conditions: append([]v1.PodCondition{cond(v1.ContainersReady, v1.ConditionTrue),
			cond(v1.PodReady, v1.ConditionTrue)}, extra...)}
	}
	readyOf := func(st v1.PodStatus) v1.PodCondition {
		for _, c := range st.Conditions {
			if c.Type == v1.PodReady {
				return c
			}
		}
		return v1.PodCondition{}
	}
	for name, tc := range map[string]struct {
		st          v1.PodStatus
		want        v1.ConditionStatus
		wantMessage string
	}{
		"gate condition missing": {st: ready(), want: v1.ConditionFalse,
			wantMessage: `corresponding condition of pod readiness gate "example.com/lb" does not exist.`},
		"gate False": {st: ready(cond("example.com/lb", v1.ConditionFalse)), want: v1.ConditionFalse,
			wantMessage: `the status of pod readiness gate "example.com/lb" is not "True", but False`},
		"gate True":            {st: ready(cond("example.com/lb", v1.ConditionTrue)), want: v1.ConditionTrue},
		"containers not ready": {st: v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.ContainersReady, v1.ConditionFalse), cond(v1.PodReady, v1.ConditionFalse)}}, want: v1.ConditionFalse},
	} {
		t.Run(name, func(t *testing.T) {
			st := tc.st
			ApplyReadinessGates(&st, gates)
			got := readyOf(st)
			if got.Status != tc.want || got.Message != tc.wantMessage {
				t.Errorf("Ready %s %q, want %s %q", got.Status, got.Message, tc.want, tc.wantMessage)
			}
		})
	}
}

// TestWithUID: the UID precondition goes in front of whatever the patch
// holds, an empty patch included; what is not an object is refused.
func TestWithUID(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                     `{"metadata":{"uid":"u\"1"}}`,
		` { } `:                  `{"metadata":{"uid":"u\"1"}}`,
		`{"status":{"phase":1}}`: `{"metadata":{"uid":"u\"1"},"status":{"phase":1}}`,
	} {
		got, err := withUID([]byte(in), `u"1`)
		if err != nil || string(got) != want {
			t.Errorf("withUID(%s) = %s, %v; want %s", in, got, err, want)
		}
		if !json.Valid(got) {
			t.Errorf("withUID(%s) = %s: not JSON", in, got)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`} {
		if _, err := withUID([]byte(bad), "u"); err == nil {
			t.Errorf("withUID(%q) accepted", bad)
		}
	}
}

// TestStatusEqualMatchesNormalizedComparison: the copy-free StatusEqual
// says what comparing normalized deep copies says (conditions as a set by
// type with the last of a type counting, probe times ignored, empty and
// nil IP lists alike), over every combination of a few condition lists
// and IP lists.
func TestStatusEqualMatchesNormalizedComparison(t *testing.T) {
	probe := func(c v1.PodCondition, sec int64) v1.PodCondition { c.LastProbeTime = metav1.Unix(sec, 0); return c }
	ready, notReady := cond(v1.PodReady, v1.ConditionTrue), cond(v1.PodReady, v1.ConditionFalse)
	init := cond(v1.PodInitialized, v1.ConditionTrue)
	condLists := [][]v1.PodCondition{
		nil,
		{},
		{ready},
		{probe(ready, 7)},
		{notReady},
		{ready, init},
		{init, ready},
		{ready, notReady}, // two of a type: the last counts
		{notReady, ready},
		{init, notReady, ready},
		{init, init},
	}
	ipLists := [][]v1.HostIP{nil, {}, {{IP: "10.0.0.1"}}}
	reference := func(s v1.PodStatus) v1.PodStatus {
		s = *s.DeepCopy()
		byType := map[v1.PodConditionType]v1.PodCondition{}
		for _, c := range s.Conditions {
			c.LastProbeTime = metaZero
			byType[c.Type] = c
		}
		s.Conditions = nil
		for _, typ := range slices.Sorted(maps.Keys(byType)) {
			s.Conditions = append(s.Conditions, byType[typ])
		}
		if len(s.HostIPs) == 0 {
			s.HostIPs = nil
		}
		if len(s.PodIPs) == 0 {
			s.PodIPs = nil
		}
		return s
	}
	for i, ca := range condLists {
		for j, cb := range condLists {
			for k, ia := range ipLists {
				for l, ib := range ipLists {
					a := v1.PodStatus{Phase: v1.PodRunning, Conditions: ca, HostIPs: ia, PodIPs: []v1.PodIP{}}
					b := v1.PodStatus{Phase: v1.PodRunning, Conditions: cb, HostIPs: ib}
					want := equality.Semantic.DeepEqual(reference(a), reference(b))
					if got := StatusEqual(a, b); got != want {
						t.Errorf("conditions %d vs %d, host IPs %d vs %d: StatusEqual %v, normalized comparison %v", i, j, k, l, got, want)
					}
				}
			}
		}
	}
	a := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready}}
	b := a
	b.Phase = v1.PodFailed
	if StatusEqual(a, b) {
		t.Error("another phase is equal")
	}
}
