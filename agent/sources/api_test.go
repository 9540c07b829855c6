package sources

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kernelet/kernelet/internal/podutil"
)

// apiInformer is a pod informer over a fixed first list and a fake watch
// the test drives.
func apiInformer(t *testing.T, initial ...*v1.Pod) (cache.SharedIndexInformer, *watch.FakeWatcher) {
	t.Helper()
	fw := watch.NewFakeWithChanSize(100, false)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for _, p := range initial {
				l.Items = append(l.Items, *p)
			}
			return l, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}
	inf := cache.NewSharedIndexInformer(noWatchList{lw}, &v1.Pod{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return inf, fw
}

// noWatchList makes the reflector list then watch (the fake watch sends
// no initial events stream).
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func apiTestPod(name, rv string) *v1.Pod {
	p := pod(name)
	p.ResourceVersion = rv
	delete(p.Annotations, podutil.AnnotationConfigSeen)
	return p
}

// nextUpdate is the source's next update, described as "OP:a,b".
func nextUpdate(t *testing.T, ch <-chan Update) (string, Update) {
	t.Helper()
	select {
	case u := <-ch:
		return describe([]Update{u}), u
	case <-time.After(10 * time.Second):
		t.Fatal("no update from the API source")
	}
	return "", Update{}
}

// TestAPISourceSendsWhatChanged: the first set is the informer's pods but
// mirror pods; after it, an event sends only the pod it names (a store of
// 100 pods is not copied for one pod's change), a deletion an OpRemove of
// its name, and a pod becoming a mirror pod is removed.
func TestAPISourceSendsWhatChanged(t *testing.T) {
	var initial []*v1.Pod
	for i := range 100 {
		initial = append(initial, apiTestPod(fmt.Sprintf("p%03d", i), "1"))
	}
	mirror := apiTestPod("mirror", "1")
	mirror.Annotations[podutil.AnnotationConfigMirror] = "x"
	inf, fw := apiInformer(t, append(initial, mirror)...)
	out := make(chan Update)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- NewAPISource(inf).Run(ctx, out) }()

	got, u := nextUpdate(t, out)
	if u.Op != OpSet || len(u.Pods) != 100 || strings.Contains(got, "mirror") {
		t.Fatalf("first update %.80s… (%d pods), want the 100 pods but the mirror pod as a set", got, len(u.Pods))
	}
	if u.Pods[0].Annotations[podutil.AnnotationConfigSource] != SourceAPI {
		t.Errorf("annotations %v, want config.source=api", u.Pods[0].Annotations)
	}

	running := apiTestPod("p042", "2")
	running.Status.Phase = v1.PodRunning
	fw.Modify(running)
	if got, u := nextUpdate(t, out); got != "ADD:p042" || u.Pods[0].Status.Phase != v1.PodRunning {
		t.Errorf("after one pod's change: %s, want ADD:p042 with its new status", got)
	}
	fw.Add(apiTestPod("new", "3"))
	if got, _ := nextUpdate(t, out); got != "ADD:new" {
		t.Errorf("after an added pod: %s, want ADD:new", got)
	}
	fw.Delete(apiTestPod("p007", "4"))
	if got, _ := nextUpdate(t, out); got != "REMOVE:p007" {
		t.Errorf("after a deleted pod: %s, want REMOVE:p007", got)
	}
	toMirror := apiTestPod("p001", "5")
	toMirror.Annotations[podutil.AnnotationConfigMirror] = "x"
	fw.Modify(toMirror)
	if got, _ := nextUpdate(t, out); got != "REMOVE:p001" {
		t.Errorf("after a pod became a mirror pod: %s, want REMOVE:p001", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestAPISourceLatestState: events that come while a send waits are
// sent later from the store, so the pods end with their latest state, each
// pod at most once per update.
func TestAPISourceLatestState(t *testing.T) {
	inf, fw := apiInformer(t, apiTestPod("a", "1"))
	out := make(chan Update)
	done := make(chan error)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- NewAPISource(inf).Run(ctx, out) }()
	if got, _ := nextUpdate(t, out); got != "SET:a" {
		t.Fatalf("first update %s, want SET:a", got)
	}
	for i := range 20 {
		p := apiTestPod("a", fmt.Sprint(10+i))
		p.Labels = map[string]string{"n": fmt.Sprint(i)}
		fw.Modify(p)
	}
	fw.Add(apiTestPod("b", "40"))
	latest := map[string]string{} // label n of each pod sent
	for _, sentB := latest["b"]; latest["a"] != "19" || !sentB; _, sentB = latest["b"] {
		got, u := nextUpdate(t, out)
		if u.Op != OpAdd {
			t.Fatalf("update %s, want ADD", got)
		}
		seen := map[string]bool{}
		for _, p := range u.Pods {
			if seen[p.Name] {
				t.Fatalf("update %s holds %s twice", got, p.Name)
			}
			seen[p.Name] = true
			latest[p.Name] = p.Labels["n"]
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
