package podworkers

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestGracePeriodOf(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		deletion, spec, override *int64
		want                     int64
	}{
		"default":                  {nil, nil, nil, 30},
		"spec":                     {nil, i(100), nil, 100},
		"deletion before the spec": {i(30), i(100), nil, 30},
		"override before them":     {i(30), i(100), i(2), 2},
		"override 0":               {nil, i(100), i(0), 0},
	} {
		pod := testPod("a", "", "")
		pod.DeletionGracePeriodSeconds, pod.Spec.TerminationGracePeriodSeconds = tc.deletion, tc.spec
		if got := GracePeriodOf(pod, tc.override); got != tc.want {
			t.Errorf("%s: GracePeriodOf = %d, want %d", name, got, tc.want)
		}
	}
}

// deleted is pod as the API server has it after a delete with grace g.
func deleted(pod *v1.Pod, g int64) *v1.Pod {
	d := pod.DeepCopy()
	now := metav1.Now()
	d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &now, &g
	return d
}

// A second delete with a shorter grace (100, then 30, then a longer 60,
// then 2) while the kill runs brings the kill's deadline to the instant
// it arrived plus its grace; a longer one does not move it back, and an
// eviction's shorter grace moves it too.
func TestShorterGraceMovesTheRunningKill(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	f := newFake()
	f.killBlock = make(chan struct{})
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour, Clock: clk})
	pod := testPod("a", "", "")
	hundred := int64(100)
	pod.Spec.TerminationGracePeriodSeconds = &hundred
	ws.Update(ctx, Update{Type: SyncPod, Pod: pod})
	wait(t, f.syncDone)
	g := int64(30)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: deleted(pod, g), GracePeriod: &g})
	wait(t, f.killed)
	k := f.lastKill()
	if k.grace == nil || *k.grace != 30 || k.deadline == nil {
		t.Fatalf("KillPod got grace %v, deadline %v; want 30 and a deadline", k.grace, k.deadline)
	}
	if at, _ := k.deadline.At(); !at.IsZero() {
		t.Fatalf("the deadline is set (%v) before a shorter grace came", at)
	}
	for _, step := range []struct {
		after time.Duration
		u     Update
		want  time.Duration // the deadline after the start; 0: none
	}{
		{5 * time.Second, Update{Type: TerminatePod, Pod: deleted(pod, 60), GracePeriod: ptr(60)}, 0},
		{5 * time.Second, Update{Type: TerminatePod, Pod: deleted(pod, 2), GracePeriod: ptr(2)}, 12 * time.Second},
		{time.Second, Update{Type: TerminatePod, Pod: deleted(pod, 2), GracePeriod: ptr(2)}, 12 * time.Second},
		{0, Update{Type: KillPod, Pod: pod, GracePeriod: ptr(1), Reason: "Evicted"}, 12 * time.Second},
		{0, Update{Type: KillPod, Pod: pod, GracePeriod: ptr(0), Reason: "Evicted"}, 11 * time.Second},
	} {
		clk.Step(step.after)
		ws.Update(ctx, step.u)
		at, _ := k.deadline.At()
		start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		if step.want == 0 && !at.IsZero() || step.want != 0 && !at.Equal(start.Add(step.want)) {
			t.Errorf("after %s with grace %d at +%v: deadline %v, want +%v", step.u.Type, *step.u.GracePeriod, clk.Since(start), at, step.want)
		}
	}
	close(f.killBlock)
	wait(t, f.cleaned)
}

func ptr(v int64) *int64 { return &v }

// A shorter grace that arrives before the kill starts (while the sync the
// deletion cancels ends) is the grace the kill starts with.
func TestShorterGraceBeforeTheKill(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{})
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	pod := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: pod})
	wait(t, f.inSync)
	f.mu.Lock()
	f.block = nil
	f.mu.Unlock()
	// The sync is held; both deletions arrive before it returns.
	ws.mu.Lock()
	ws.updateLocked(ctx, Update{Type: TerminatePod, Pod: deleted(pod, 30), GracePeriod: ptr(30)})
	ws.updateLocked(ctx, Update{Type: TerminatePod, Pod: deleted(pod, 3), GracePeriod: ptr(3)})
	ws.mu.Unlock()
	wait(t, f.killed)
	if k := f.lastKill(); k.grace == nil || *k.grace != 3 {
		t.Errorf("the kill started with grace %v, want 3", k.grace)
	}
	wait(t, f.cleaned)
}

// The status KillPod returns once the containers stopped is reported as
// the pod's final status before the cleanup, with the pod IPs of the last
// status when it has none; a killed (evicted) pod keeps its reason.
func TestFinalStatusReported(t *testing.T) {
	for name, tc := range map[string]struct {
		u         func(*v1.Pod) Update
		phase     v1.PodPhase
		reason    string
		condition bool
	}{
		"deleted": {func(p *v1.Pod) Update { return Update{Type: TerminatePod, Pod: deleted(p, 30), GracePeriod: ptr(30)} },
			v1.PodSucceeded, "", false},
		"evicted": {func(p *v1.Pod) Update {
			return Update{Type: KillPod, Pod: p, GracePeriod: ptr(1), Reason: "Evicted", Message: "m",
				Status: func(st v1.PodStatus) v1.PodStatus {
					st.Conditions = append(st.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue})
					return st
				}}
		}, v1.PodFailed, "Evicted", true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			f.final = &v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}}}
			var statuses []v1.PodStatus
			ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour, OnStatus: func(_ *v1.Pod, st v1.PodStatus) {
				statuses = append(statuses, st)
			}})
			f.mu.Lock()
			f.phase = v1.PodRunning
			f.mu.Unlock()
			pod := testPod("a", "", "")
			ws.Update(ctx, Update{Type: SyncPod, Pod: pod})
			wait(t, f.syncDone)
			waitFor(t, func() bool { ws.mu.Lock(); defer ws.mu.Unlock(); return len(statuses) == 1 })
			ws.mu.Lock()
			ws.workers[pod.UID].rec.Status.PodIP = "10.1.2.3"
			ws.workers[pod.UID].rec.Status.PodIPs = []v1.PodIP{{IP: "10.1.2.3"}}
			ws.mu.Unlock()
			ws.Update(ctx, tc.u(pod))
			wait(t, f.cleaned)
			var final *v1.PodStatus
			waitFor(t, func() bool {
				ws.mu.Lock()
				defer ws.mu.Unlock()
				for i := range statuses {
					if len(statuses[i].ContainerStatuses) == 1 {
						final = &statuses[i]
					}
				}
				return final != nil
			})
			if final.Phase != tc.phase || final.Reason != tc.reason || final.PodIP != "10.1.2.3" ||
				final.ContainerStatuses[0].State.Terminated == nil {
				t.Errorf("final status %+v, want phase %s reason %q, the pod IP kept, the container terminated", final, tc.phase, tc.reason)
			}
			hasCond := false
			for _, c := range final.Conditions {
				hasCond = hasCond || c.Type == v1.DisruptionTarget
			}
			if hasCond != tc.condition {
				t.Errorf("DisruptionTarget condition %v, want %v", hasCond, tc.condition)
			}
		})
	}
}
