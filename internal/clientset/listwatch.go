package clientset

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListerWatcher is the list and watch of one resource.
type ListerWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatch is an informer's list and watch of c; tweak, when not nil,
// edits the options of every request (a field or label selector).
func ListWatch[L runtime.Object](c ListerWatcher[L], tweak func(*metav1.ListOptions)) *cache.ListWatch {
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return c.Watch(ctx, o)
		},
	}
}
