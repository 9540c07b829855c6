package podworkers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// slowSyncer's first SyncPod ignores cancellation until released (a CRI
// call in flight).
type slowSyncer struct {
	*fakeSyncer
	release chan struct{}
	once    sync.Once
}

func (s *slowSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error) {
	s.record("sync", pod.UID)
	s.inSync <- struct{}{}
	first := false
	s.once.Do(func() { first = true })
	if first {
		<-s.release
	}
	s.syncDone <- struct{}{}
	return SyncResult{Status: v1.PodStatus{Phase: v1.PodRunning}}, nil
}

// A pod removed and re-added (same UID) while its sync is in flight is
// started again once the termination is done, not lost.
func TestReAddedWhileSyncingRestarts(t *testing.T) {
	f := &slowSyncer{fakeSyncer: newFake(), release: make(chan struct{})}
	terminated := make(chan types.UID, 4)
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour, OnTerminated: func(p *v1.Pod) { terminated <- p.UID }})
	a := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	wait(t, f.inSync)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: a}) // manifest moved out
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})      // and back
	close(f.release)
	wait(t, f.cleaned)
	wait(t, terminated)
	time.Sleep(100 * time.Millisecond)
	if !ws.Known(a.UID) {
		t.Errorf("re-added pod lost: not known after termination; syncs=%d", f.count("sync"))
	}
}

// failStop's StopPod always fails.
type failStop struct{ *fakeSyncer }

func (s *failStop) StopPod(_ context.Context, pod *v1.Pod) (v1.PodStatus, error) {
	s.record("stop", pod.UID)
	return v1.PodStatus{}, errors.New("cgroup busy")
}

// A finished pod whose stop keeps failing is still removed when its
// source drops it.
func TestStopPodFailureDoesNotBlockTerminate(t *testing.T) {
	f := &failStop{newFake()}
	f.phase = v1.PodSucceeded
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour, BackoffInitial: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond})
	a := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	waitFor(t, func() bool { return f.count("stop") > 0 })
	ws.Update(ctx, Update{Type: TerminatePod, Pod: a})
	time.Sleep(300 * time.Millisecond)
	if f.count("kill") == 0 {
		t.Errorf("terminate never ran (%d StopPod attempts); pod never removed", f.count("stop"))
	}
}

// A pod its source removes while it is being killed (eviction) is
// forgotten, not kept as Failed.
func TestTerminateDuringKillForgets(t *testing.T) {
	f := newFake()
	f.killBlock = make(chan struct{})
	ws, ctx := startWorkers(t, Config{Syncer: f, SyncFrequency: time.Hour})
	a := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: a})
	wait(t, f.syncDone)
	ws.Update(ctx, Update{Type: KillPod, Pod: a, Reason: "Evicted"})
	wait(t, f.killed)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: a})
	close(f.killBlock)
	wait(t, f.cleaned)
	time.Sleep(100 * time.Millisecond)
	if ws.Known(a.UID) {
		t.Errorf("pod removed by its source during the kill is still known (Failed record forever)")
	}
}

// A pod that waited for its name and is re-sent while the old pod's
// termination completes starts once, is listed once, and stays removed.
func TestWaitingPodReSentStartsOnce(t *testing.T) {
	f := newFake()
	gap := make(chan struct{})
	resume := make(chan struct{})
	ws, _ := New(Config{Syncer: f, SyncFrequency: time.Hour, OnTerminated: func(p *v1.Pod) {
		if p.UID == "uid-web" {
			close(gap)
			<-resume
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ws.Wait() }()
	old := testPod("web", "", "")
	b := testPod("web", "", "")
	b.UID = "uid-web-2"
	ws.Update(ctx, Update{Type: SyncPod, Pod: old})
	wait(t, f.syncDone)
	ws.Update(ctx, Update{Type: SyncPod, Pod: b}) // waits
	ws.Update(ctx, Update{Type: TerminatePod, Pod: old})
	<-gap
	ws.Update(ctx, Update{Type: SyncPod, Pod: b}) // re-sent in the unlocked gap: starts
	close(resume)
	wait(t, f.syncDone)
	time.Sleep(50 * time.Millisecond)
	n := 0
	for _, r := range ws.Pods() {
		if r.Pod.UID == b.UID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("b listed %d times", n)
	}
	ws.Update(ctx, Update{Type: TerminatePod, Pod: b})
	wait(t, f.cleaned)
	wait(t, f.cleaned)
	time.Sleep(100 * time.Millisecond)
	if ws.Known(b.UID) {
		t.Errorf("b was removed by its source but started again (syncs=%d)", f.count("sync"))
	}
}

// grpcCancelSyncer's SyncPod waits for its context to end and then fails
// as a CRI call cut short does: a gRPC Canceled status, which wraps no
// context.Canceled.
type grpcCancelSyncer struct{ *fakeSyncer }

func (s grpcCancelSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error) {
	s.record("sync", pod.UID)
	s.inSync <- struct{}{}
	<-ctx.Done()
	return SyncResult{}, errors.New("StartContainer app: rpc error: code = Canceled desc = context canceled")
}

// A sync cut short by the pod's termination is no failed sync: it is not
// logged as one (the slow-runtime fault test saw "Sync pod failed" for
// each pod deleted while a CRI call was held) and the pod terminates.
func TestSyncCancelledByTerminateIsNoFailure(t *testing.T) {
	f := grpcCancelSyncer{newFake()}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	lctx := klog.NewContext(context.Background(), logger)
	ws, err := New(Config{Syncer: f, SyncFrequency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(lctx)
	t.Cleanup(func() { cancel(); ws.Wait() })
	p := testPod("a", "", "")
	ws.Update(ctx, Update{Type: SyncPod, Pod: p})
	wait(t, f.inSync)
	ws.Update(ctx, Update{Type: TerminatePod, Pod: p})
	wait(t, f.killed)
	wait(t, f.cleaned)
	log := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if strings.Contains(log, "Sync pod failed") {
		t.Errorf("a sync cancelled by the terminate was logged as a failure:\n%s", log)
	}
	if !strings.Contains(log, "Sync pod cancelled") {
		t.Errorf("no \"Sync pod cancelled\" line:\n%s", log)
	}
}

// A pod already Succeeded in the API server when the workers first see it
// (an agent restart) is not admitted again nor run: its phase stays, what
// of it may still run is stopped, and its requests do not count against
// the pods admitted after it. Before, it went through admission again and
// the resource fit (its extended resource not offered yet) turned it
// Failed.
func TestTerminalInSourceNotAdmitted(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	var admitted []string
	var statuses []string
	record := AdmitFunc(func(a AdmitAttributes) AdmitResult {
		mu.Lock()
		defer mu.Unlock()
		admitted = append(admitted, a.Pod.Name)
		return AdmitResult{Admit: true}
	})
	const ext = v1.ResourceName("example.com/resource")
	terminated := make(chan *v1.Pod, 1)
	ws, err := New(Config{Syncer: f, Admit: []AdmitHandler{record,
		ResourceFit(Allocatable{MilliCPU: 1000, Pods: 1}),
		ExtendedFit(func() map[v1.ResourceName]int64 { return map[v1.ResourceName]int64{ext: 1} })},
		OnStatus: func(p *v1.Pod, st v1.PodStatus) {
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, p.Name+"="+string(st.Phase))
		},
		OnTerminated: func(p *v1.Pod) { terminated <- p }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	withExt := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Resources.Requests[ext] = resource.MustParse("1")
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{ext: resource.MustParse("1")}
		return p
	}
	done := withExt(testPod("done", "600m", ""))
	done.Status = v1.PodStatus{Phase: v1.PodSucceeded, Reason: "Completed", Message: "all done"}
	ws.Update(ctx, Update{Type: SyncPod, Pod: done})
	if uid := wait(t, f.stopped); uid != done.UID {
		t.Fatalf("stopped %s, want the terminal pod stopped", uid)
	}
	ws.Reconcile(ctx, done) // its status echoed again: still nothing runs
	b := withExt(testPod("b", "600m", ""))
	ws.Update(ctx, Update{Type: SyncPod, Pod: b}) // fits only if done does not count (cpu, pods, ext)
	wait(t, f.syncDone)
	mu.Lock()
	if len(admitted) != 1 || admitted[0] != "b" {
		t.Errorf("admitted %v, want only b", admitted)
	}
	for _, s := range statuses {
		if strings.HasPrefix(s, "done=") {
			t.Errorf("the terminal pod's status was changed: %s", s)
		}
	}
	mu.Unlock()
	for _, r := range ws.Pods() {
		switch r.Pod.Name {
		case "done":
			if r.Status.Phase != v1.PodSucceeded || r.Status.Reason != "Completed" || !r.Finished {
				t.Errorf("terminal pod record %+v", r)
			}
		case "b":
			if r.Status.Phase != v1.PodRunning {
				t.Errorf("b is %q, want admitted and running", r.Status.Phase)
			}
		}
	}
	if n := f.count("sync"); n != 1 {
		t.Errorf("%d syncs, want 1 (b's; the terminal pod never syncs)", n)
	}
	ws.Update(ctx, Update{Type: TerminatePod, Pod: done}) // deleted in the API server
	if uid := wait(t, f.killed); uid != done.UID {
		t.Fatalf("killed %s", uid)
	}
	wait(t, f.cleaned)
	if p := wait(t, terminated); p.UID != done.UID {
		t.Fatalf("terminated %s", p.UID)
	}
}
