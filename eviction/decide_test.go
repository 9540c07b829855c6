package eviction

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const mi = 1 << 20

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func hard(s Signal, v string) Threshold {
	return Threshold{Signal: s, Operator: OpLessThan, Value: Value{Quantity: qty(v)}}
}

func TestThresholdsMet(t *testing.T) {
	mem := hard(SignalMemoryAvailable, "100Mi")
	mem.MinReclaim = &Value{Quantity: qty("50Mi")}
	pct := Threshold{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: Value{Percentage: 0.1}}
	cases := map[string]struct {
		obs        Observations
		minReclaim bool
		want       []Signal
	}{
		"above threshold":             {obs: Observations{SignalMemoryAvailable: {Available: 101 * mi, Capacity: 1000 * mi}}},
		"equal is not met":            {obs: Observations{SignalMemoryAvailable: {Available: 100 * mi, Capacity: 1000 * mi}}},
		"below":                       {obs: Observations{SignalMemoryAvailable: {Available: 99 * mi}}, want: []Signal{SignalMemoryAvailable}},
		"within min-reclaim, not met": {obs: Observations{SignalMemoryAvailable: {Available: 120 * mi}}},
		"within min-reclaim, still met": {obs: Observations{SignalMemoryAvailable: {Available: 120 * mi}}, minReclaim: true,
			want: []Signal{SignalMemoryAvailable}},
		"past min-reclaim": {obs: Observations{SignalMemoryAvailable: {Available: 151 * mi}}, minReclaim: true},
		"percentage of capacity": {obs: Observations{SignalNodeFsAvailable: {Available: 99, Capacity: 1000}},
			want: []Signal{SignalNodeFsAvailable}},
		"unobserved signal": {obs: Observations{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ThresholdsMet([]Threshold{mem, pct}, tc.obs, tc.minReclaim)
			var sigs []Signal
			for _, g := range got {
				sigs = append(sigs, g.Signal)
			}
			if len(sigs) != len(tc.want) || (len(sigs) > 0 && sigs[0] != tc.want[0]) {
				t.Fatalf("met %v, want %v", sigs, tc.want)
			}
		})
	}
}

func TestGraceAndTransition(t *testing.T) {
	t0 := time.Unix(1000, 0)
	soft := hard(SignalMemoryAvailable, "1Gi")
	soft.GracePeriod = 30 * time.Second
	first := UpdateFirstObserved([]Threshold{soft}, nil, t0)
	if got := MetGracePeriod([]Threshold{soft}, first, t0.Add(29*time.Second)); len(got) != 0 {
		t.Fatalf("soft threshold acted on before its grace period: %v", got)
	}
	first = UpdateFirstObserved([]Threshold{soft}, first, t0.Add(29*time.Second))
	if got := MetGracePeriod([]Threshold{soft}, first, t0.Add(30*time.Second)); len(got) != 1 {
		t.Fatalf("soft threshold met for its grace period not acted on")
	}
	// Not met once: the grace period starts again.
	first = UpdateFirstObserved(nil, first, t0.Add(31*time.Second))
	first = UpdateFirstObserved([]Threshold{soft}, first, t0.Add(32*time.Second))
	if got := MetGracePeriod([]Threshold{soft}, first, t0.Add(40*time.Second)); len(got) != 0 {
		t.Fatalf("grace period did not restart")
	}

	last := ConditionsLastObserved([]Threshold{soft, hard(SignalPIDAvailable, "100")}, nil, t0)
	if got := ConditionsObservedSince(last, time.Minute, t0.Add(59*time.Second)); len(got) != 2 || got[0] != v1.NodeMemoryPressure || got[1] != v1.NodePIDPressure {
		t.Fatalf("conditions within the transition period: %v", got)
	}
	if got := ConditionsObservedSince(last, time.Minute, t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("conditions after the transition period: %v", got)
	}
}

type podOpt func(*v1.Pod)

func mkPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func memRequest(v string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(v)}
	}
}

func memLimit(v string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(v), v1.ResourceCPU: resource.MustParse("100m")}
		p.Spec.Containers[0].Resources.Requests = p.Spec.Containers[0].Resources.Limits
	}
}

func prio(n int32) podOpt { return func(p *v1.Pod) { p.Spec.Priority = &n } }

func static(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }

func ws(n int64) PodStats {
	return PodStats{MemoryWorkingSet: n * mi, Containers: map[string]int64{"app": n * mi}}
}

func names(ps []*v1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestRankMemory(t *testing.T) {
	be := mkPod("besteffort")
	burstOver := mkPod("burstable-over", memRequest("100Mi"))
	burstUnder := mkPod("burstable-under", memRequest("500Mi"))
	guaranteed := mkPod("guaranteed", memLimit("300Mi"))
	hiPrio := mkPod("high-priority-over", memRequest("10Mi"), prio(1000))
	nostats := mkPod("no-stats")
	stats := map[types.UID]PodStats{
		be.UID: ws(50), burstOver.UID: ws(400), burstUnder.UID: ws(200), guaranteed.UID: ws(250), hiPrio.UID: ws(900),
	}
	got := names(RankMemory([]*v1.Pod{guaranteed, burstUnder, hiPrio, be, burstOver, nostats}, stats))
	want := []string{"no-stats", "burstable-over", "besteffort", "high-priority-over", "guaranteed", "burstable-under"}
	if len(got) != len(want) {
		t.Fatalf("rank %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rank %v, want %v", got, want)
		}
	}
}

func TestRankPIDs(t *testing.T) {
	a, b, c := mkPod("a"), mkPod("b"), mkPod("c", prio(10))
	stats := map[types.UID]PodStats{a.UID: {Processes: 5}, b.UID: {Processes: 50}, c.UID: {Processes: 500}}
	if got := names(RankPIDs([]*v1.Pod{a, c, b}, stats)); got[0] != "b" || got[1] != "a" || got[2] != "c" {
		t.Fatalf("rank %v", got)
	}
}

func TestMessage(t *testing.T) {
	pod := mkPod("p", memRequest("512Mi"))
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side"})
	th := hard(SignalMemoryAvailable, "100Mi")
	obs := Observations{SignalMemoryAvailable: {Available: 42 * mi, Capacity: 8000 * mi}}
	ps := PodStats{MemoryWorkingSet: 1600 * mi, Containers: map[string]int64{"app": 1500 * mi, "side": 100*mi + 512}}
	got := Message(v1.ResourceMemory, pod, ps, true, []Threshold{th}, obs)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi. " +
		"Container app was using 1500Mi, request is 512Mi, has larger consumption of memory. " +
		"Container side was using 104858112, request is 0, has larger consumption of memory. "
	if got != want {
		t.Fatalf("message\n got %q\nwant %q", got, want)
	}
	if got := Message(v1.ResourceMemory, pod, PodStats{}, false, []Threshold{th}, obs); got != "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi. " {
		t.Fatalf("message without stats %q", got)
	}
	pct := Threshold{Signal: SignalAllocatableMemoryAvailable, Value: Value{Percentage: 0.5}}
	obs = Observations{SignalAllocatableMemoryAvailable: {Available: 43480 * 1024, Capacity: 1024 * mi}}
	if got := Message(v1.ResourceMemory, pod, PodStats{}, false, []Threshold{pct}, obs); got != "The node was low on resource: memory. Threshold quantity: 512Mi, available: 43480Ki. " {
		t.Fatalf("message of a percentage %q", got)
	}
}

func TestEvictedStatus(t *testing.T) {
	now := time.Unix(2000, 0)
	st := v1.PodStatus{Phase: v1.PodRunning,
		Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	got := EvictedStatusOf(st, Eviction{Message: "msg. "}, now)
	if got.Phase != v1.PodFailed || got.Reason != "Evicted" || got.Message != "msg. " {
		t.Fatalf("status %+v", got)
	}
	var dt *v1.PodCondition
	for i := range got.Conditions {
		if got.Conditions[i].Type == v1.DisruptionTarget {
			dt = &got.Conditions[i]
		}
		if got.Conditions[i].Type == v1.PodReady && got.Conditions[i].Status != v1.ConditionFalse {
			t.Fatalf("Ready stays True")
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" || dt.Message != "msg. " {
		t.Fatalf("DisruptionTarget %+v", dt)
	}
	if term := got.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Fatalf("container state %+v", got.ContainerStatuses[0].State)
	}
	if st.Phase != v1.PodRunning {
		t.Fatalf("input modified")
	}
}

func TestAdmit(t *testing.T) {
	be := mkPod("be")
	tolerant := mkPod("be-tolerant")
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	burst := mkPod("burst", memRequest("10Mi"))
	crit := mkPod("static", static)
	mirror := mkPod("mirror")
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash", "kubernetes.io/config.source": "api"}
	mem := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}
	cases := map[string]struct {
		conds      []v1.NodeConditionType
		pod        *v1.Pod
		bestEffort bool
		admit      bool
		msg        string
	}{
		"no pressure":                 {nil, be, true, true, ""},
		"memory pressure, BestEffort": {mem, be, true, false, "The node had condition: [MemoryPressure]. "},
		"memory pressure, tolerates":  {mem, tolerant, true, true, ""},
		"memory pressure, Burstable":  {mem, burst, false, true, ""},
		"disk pressure, Burstable":    {disk, burst, false, false, "The node had condition: [MemoryPressure DiskPressure]. "},
		"disk pressure, critical":     {disk, crit, true, true, ""},
		"memory pressure, mirror":     {mem, mirror, true, true, ""},
		"psi pressure, BestEffort":    {[]v1.NodeConditionType{ConditionPSIPressure}, be, true, false, "The node had condition: [kernelet.io/PSIPressure]. "},
		"psi pressure, Burstable":     {[]v1.NodeConditionType{v1.NodeMemoryPressure, ConditionPSIPressure}, burst, false, true, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := Admit(tc.conds, tc.pod, tc.bestEffort)
			if r.Admit != tc.admit || r.Message != tc.msg || (!r.Admit && r.Reason != "Evicted") {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestGracePeriod(t *testing.T) {
	soft := hard(SignalMemoryAvailable, "1Gi")
	soft.GracePeriod = time.Minute
	own := int64(20)
	pod := mkPod("p")
	pod.Spec.TerminationGracePeriodSeconds = &own
	if g := GracePeriod(hard(SignalMemoryAvailable, "1Gi"), 30, pod); g == nil || *g != 1 {
		t.Fatalf("hard grace %v", g)
	}
	if g := GracePeriod(soft, 30, pod); *g != 20 {
		t.Fatalf("soft grace with a shorter pod grace %v", *g)
	}
	if g := GracePeriod(soft, 10, pod); *g != 10 {
		t.Fatalf("soft grace %v", *g)
	}
	if g := GracePeriod(soft, -1, pod); g != nil {
		t.Fatalf("negative max grace must keep the pod's own, got %v", *g)
	}
}
