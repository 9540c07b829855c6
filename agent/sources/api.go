package sources

import (
	"context"
	"fmt"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/kernelet/kernelet/internal/podutil"
)

// NodePodsSelector is the field selector of the pods bound to node: the
// API source's informer lists and watches only those.
func NodePodsSelector(node string) string {
	return fields.OneTermEqualSelector("spec.nodeName", node).String()
}

// APISource is the pods the API server binds to this node, from a pod
// informer that selects them (NodePodsSelector). Mirror pods are left out.
// It sends its first set (OpSet) once the informer has synced, then only
// the pods the informer's events named since its last send: an OpAdd
// (add or replace) of those still in the store and an OpRemove of those
// gone, so that one event costs one pod's copy, not the whole store's
// (events that come while a send waits coalesce into the next).
type APISource struct {
	informer cache.SharedIndexInformer
}

// NewAPISource returns the source of informer's pods. The informer is
// started by its owner (a shared informer factory); the source only reads.
func NewAPISource(informer cache.SharedIndexInformer) *APISource {
	return &APISource{informer: informer}
}

// Name implements Source.
func (s *APISource) Name() string { return SourceAPI }

// Problems implements Source; the API source has none of its own: the
// informer retries and logs its errors.
func (s *APISource) Problems() []Problem { return nil }

// changedKeys are the store keys (namespace/name) the informer's events
// named since they were last taken.
type changedKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
	wake chan struct{}
}

func (c *changedKeys) note(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return // not an object with metadata: nothing to name
	}
	c.mu.Lock()
	c.keys[key] = struct{}{}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *changedKeys) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.keys))
	for k := range c.keys {
		out = append(out, k)
	}
	clear(c.keys)
	return out
}

// Run implements Source.
func (s *APISource) Run(ctx context.Context, out chan<- Update) error {
	changed := &changedKeys{keys: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	reg, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed.note,
		UpdateFunc: func(_, obj any) { changed.note(obj) },
		DeleteFunc: changed.note,
	})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	defer func() { _ = s.informer.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // ctx ended first
	}
	// The first set is the whole store; what changes from here on is sent
	// again (events already in the set are sent twice: harmless).
	changed.take()
	if !send(ctx, out, SourceAPI, s.pods()) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed.wake:
		}
		for _, u := range s.changes(changed.take()) {
			if !deliver(ctx, out, u) {
				return nil
			}
		}
	}
}

// deliver sends u, or gives up when ctx is done.
func deliver(ctx context.Context, out chan<- Update, u Update) bool {
	select {
	case out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}

// changes are the updates for the store keys named: OpRemove of those
// gone from the store (or mirror pods), then OpAdd of the others.
func (s *APISource) changes(keys []string) []Update {
	var gone, here []*v1.Pod
	for _, key := range keys {
		obj, exists, err := s.informer.GetStore().GetByKey(key)
		pod, ok := obj.(*v1.Pod)
		if err != nil || !exists || !ok || podutil.IsMirror(pod) {
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			gone = append(gone, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			continue
		}
		here = append(here, apiPod(pod))
	}
	var ups []Update
	if len(gone) > 0 {
		ups = append(ups, Update{Op: OpRemove, Source: SourceAPI, Pods: gone})
	}
	if len(here) > 0 {
		ups = append(ups, Update{Op: OpAdd, Source: SourceAPI, Pods: here})
	}
	return ups
}

// pods are the informer's pods but mirror pods (apiPod of each).
func (s *APISource) pods() []*v1.Pod {
	objs := s.informer.GetStore().List()
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		pod, ok := o.(*v1.Pod)
		if !ok || podutil.IsMirror(pod) {
			continue
		}
		out = append(out, apiPod(pod))
	}
	return out
}

// apiPod is a copy of the informer's pod with
// kubernetes.io/config.source=api as kubelet annotates them.
func apiPod(pod *v1.Pod) *v1.Pod {
	c := pod.DeepCopy()
	c.Annotations = maps.Clone(c.Annotations)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[podutil.AnnotationConfigSource] = SourceAPI
	return c
}
