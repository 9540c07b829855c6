package sources

import (
	"context"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
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
// It sends its first set once the informer has synced, then a new set
// whenever the informer's store changes.
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

// Run implements Source.
func (s *APISource) Run(ctx context.Context, out chan<- Update) error {
	wake := make(chan struct{}, 1)
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	reg, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	defer func() { _ = s.informer.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // ctx ended first
	}
	notify()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		select {
		case out <- Update{Op: OpSet, Source: SourceAPI, Pods: s.pods()}:
		case <-ctx.Done():
			return nil
		}
	}
}

// pods are the informer's pods but mirror pods, each a copy with
// kubernetes.io/config.source=api as kubelet annotates them.
func (s *APISource) pods() []*v1.Pod {
	objs := s.informer.GetStore().List()
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		pod, ok := o.(*v1.Pod)
		if !ok || podutil.IsMirror(pod) {
			continue
		}
		c := pod.DeepCopy()
		c.Annotations = maps.Clone(c.Annotations)
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[podutil.AnnotationConfigSource] = SourceAPI
		out = append(out, c)
	}
	return out
}
