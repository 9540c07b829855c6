package pods

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

type harness struct {
	client  *fake.Clientset
	indexer cache.Indexer
	m       *Manager
}

func newHarness(t *testing.T, objs ...*v1.Pod) *harness {
	t.Helper()
	h := &harness{client: fake.NewClientset(), indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	for _, o := range objs {
		h.add(t, o)
	}
	m, err := New(Config{Client: clientsettest.FromClientset(h.client), Pods: corelisters.NewPodLister(h.indexer), NodeName: "node-1",
		NodeUID: func() types.UID { return "node-uid" }})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

// add puts pod into the API server and the lister, as the informer would.
func (h *harness) add(t *testing.T, pod *v1.Pod) {
	t.Helper()
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
}

// refresh copies the API server's pods into the lister.
func (h *harness) refresh(t *testing.T) {
	t.Helper()
	list, err := h.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	if err := h.indexer.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) actions(verb, sub string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetSubresource() == sub && a.GetResource().Resource == "pods" {
			out = append(out, a)
		}
	}
	return out
}

func apiPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec:   v1.PodSpec{NodeName: "node-1"},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionTrue)}}}
}

func TestManagerPatchesChangedStatusOnly(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("web", "u1")
	h := newHarness(t, pod)
	running := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.2", Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}}
	h.m.SetStatus(pod, running)
	h.m.round(ctx, false)
	if n := len(h.actions("patch", "status")); n != 1 {
		t.Fatalf("%d status patches, want 1", n)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.1.0.2" || len(got.Status.Conditions) != 2 {
		t.Errorf("API status %+v", got.Status)
	}
	// The informer has not caught up: the same status is not sent again.
	h.m.SetStatus(pod, running)
	h.m.round(ctx, false)
	// Caught up, full resync: nothing differs.
	h.refresh(t)
	h.m.round(ctx, true)
	if n := len(h.actions("patch", "status")); n != 1 {
		t.Errorf("%d status patches after unchanged rounds, want 1", n)
	}
	// Someone else changed it: the resync puts ours back.
	got.Status.PodIP = "10.9.9.9"
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh(t)
	h.m.round(ctx, true)
	if n := len(h.actions("patch", "status")); n != 2 {
		t.Errorf("%d status patches after an outside change, want 2", n)
	}
}

// A status reports the generation of the pod it was computed for, not the
// API server's newer one (a resize the agent has not seen yet).
func TestManagerObservedGenerationOfSyncedPod(t *testing.T) {
	ctx := context.Background()
	synced := apiPod("web", "u1")
	synced.Generation = 1
	newer := synced.DeepCopy()
	newer.Generation = 2
	h := newHarness(t, newer)
	h.m.SetStatus(synced, v1.PodStatus{Phase: v1.PodRunning})
	h.m.round(ctx, false)
	got, _ := h.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if got.Status.ObservedGeneration != 1 {
		t.Fatalf("observedGeneration %d, want 1 (the synced pod's)", got.Status.ObservedGeneration)
	}
	h.refresh(t)
	h.m.SetStatus(newer, v1.PodStatus{Phase: v1.PodRunning})
	h.m.round(ctx, false)
	got, _ = h.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if got.Status.ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d after the newer pod's sync, want 2", got.Status.ObservedGeneration)
	}
}

func TestManagerSkipsPodOfAnotherUID(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, apiPod("web", "new-uid"))
	h.m.SetStatus(apiPod("web", "old-uid"), v1.PodStatus{Phase: v1.PodRunning})
	h.m.round(ctx, true)
	if n := len(h.actions("patch", "status")); n != 0 {
		t.Errorf("%d status patches to a re-created pod, want 0", n)
	}
}

// markDeleting puts pod in the informer's cache with a deletionTimestamp,
// as the API server has it once it is deleted gracefully.
func (h *harness) markDeleting(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if err := h.indexer.Update(deleting); err != nil {
		t.Fatal(err)
	}
	return deleting
}

func TestManagerFinalizesDeletedPod(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("web", "u1")
	h := newHarness(t, pod)
	h.markDeleting(t, pod)
	h.m.Terminated(pod)
	h.m.round(ctx, false)
	dels := h.actions("delete", "")
	if len(dels) != 1 {
		t.Fatalf("%d deletes, want 1", len(dels))
	}
	opts := dels[0].(k8stesting.DeleteActionImpl).DeleteOptions
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != "u1" {
		t.Errorf("delete options %+v", opts)
	}
	// Done once: a later round deletes nothing more.
	h.m.round(ctx, false)
	if n := len(h.actions("delete", "")); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

// The final status of a terminated pod the API server is deleting (its
// containers terminated) is written before the pod is deleted for good,
// as kubelet's status manager does; while the write fails, the pod is not
// deleted; a pod gone meanwhile leaves nothing behind.
func TestManagerFinalStatusBeforeDeletion(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("web", "u1")
	h := newHarness(t, pod)
	deleting := h.markDeleting(t, pod)
	failing := true
	h.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, apierrors.NewServiceUnavailable("try later")
		}
		return false, nil, nil
	})
	final := v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}
	h.m.SetStatus(deleting, final)
	h.m.Terminated(deleting)
	h.m.round(ctx, false)
	if n := len(h.actions("delete", "")); n != 0 {
		t.Fatalf("%d deletes while the final status is not written, want 0", n)
	}
	failing = false
	h.m.round(ctx, false)
	var verbs []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "delete" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if len(verbs) != 3 || verbs[1] != "patch" || verbs[2] != "delete" {
		t.Fatalf("actions %v, want a failed patch, then the patch, then the delete", verbs)
	}
	patches := h.actions("patch", "status")
	if body := string(patches[len(patches)-1].(k8stesting.PatchActionImpl).Patch); !strings.Contains(body, `"phase":"Succeeded"`) ||
		!strings.Contains(body, `"terminated"`) {
		t.Errorf("final status patch %s, want phase Succeeded and the container terminated", body)
	}
	if n := len(h.m.entries); n != 0 {
		t.Errorf("%d status entries left after the final status, want 0", n)
	}

	// A terminated pod gone from the API server: its entry goes too.
	other := apiPod("gone", "u2")
	h.m.SetStatus(other, final)
	h.m.Terminated(other)
	h.m.round(ctx, false)
	if n := len(h.m.entries); n != 0 {
		t.Errorf("%d status entries left for a pod gone from the API server, want 0", n)
	}
}

func TestManagerLeavesPodNotBeingDeleted(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("web", "u1")
	h := newHarness(t, pod)
	h.m.Terminated(pod) // e.g. rejected, or moved away: not deleted by the API server
	h.m.round(ctx, false)
	if n := len(h.actions("delete", "")); n != 0 {
		t.Errorf("%d deletes of a pod not being deleted, want 0", n)
	}
}

func TestManagerMirrorPods(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := staticPod("etcd-node-1", "h1")
	h.m.SetStaticPods([]*v1.Pod{s})
	h.m.round(ctx, false)
	if n := len(h.actions("create", "")); n != 1 {
		t.Fatalf("%d creates, want 1", n)
	}
	h.refresh(t)
	mirror, err := h.client.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-1", metav1.GetOptions{})
	if err != nil || !IsMirrorOf(mirror, s) {
		t.Fatalf("mirror %v %v", mirror, err)
	}
	// The static pod's status goes to the mirror.
	h.m.SetStatus(s, v1.PodStatus{Phase: v1.PodRunning})
	h.m.round(ctx, false)
	mirror, _ = h.client.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-1", metav1.GetOptions{})
	if mirror.Status.Phase != v1.PodRunning {
		t.Errorf("mirror phase %q", mirror.Status.Phase)
	}
	// Deleted by a user: created again.
	if err := h.client.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh(t)
	h.m.round(ctx, false)
	if n := len(h.actions("create", "")); n != 2 {
		t.Errorf("%d creates after the mirror was deleted, want 2", n)
	}
	// The static pod goes: so does its mirror.
	h.refresh(t)
	h.m.SetStaticPods(nil)
	h.m.round(ctx, false)
	if _, err := h.client.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-1", metav1.GetOptions{}); err == nil {
		t.Error("mirror pod still there after its static pod went")
	}
}
