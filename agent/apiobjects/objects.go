package apiobjects

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kernelet/kernelet/internal/clientset"
)

// Object kinds an ObjectRef names.
const (
	KindConfigMap = "configmap"
	KindSecret    = "secret"
)

// ObjectRef names a configMap or secret.
type ObjectRef struct {
	Kind, Namespace, Name string
}

// PodReferences are the configMaps and secrets pod references — volumes,
// projected sources, env, envFrom (every container) and image pull
// secrets — sorted, without duplicates.
func PodReferences(pod *v1.Pod) []ObjectRef {
	var out []ObjectRef
	add := func(kind, name string) {
		r := ObjectRef{Kind: kind, Namespace: pod.Namespace, Name: name}
		if name != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(KindSecret, s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(KindConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			add(KindSecret, v.Secret.SecretName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add(KindConfigMap, p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add(KindSecret, p.Secret.Name)
				}
			}
		}
	}
	each := func(cs []v1.Container) {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					add(KindConfigMap, e.ConfigMapRef.Name)
				}
				if e.SecretRef != nil {
					add(KindSecret, e.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					add(KindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
				}
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					add(KindSecret, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
	each(pod.Spec.InitContainers)
	each(pod.Spec.Containers)
	slices.SortFunc(out, func(a, b ObjectRef) int {
		return cmpStrings(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	return out
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Strategy is how an ObjectManager learns of object changes: kubelet's
// configMapAndSecretChangeDetectionStrategy.
type Strategy string

// Strategies, kubelet's names.
const (
	// StrategyWatch keeps one watch per referenced object.
	StrategyWatch Strategy = "Watch"
	// StrategyCache reads objects with a GET and keeps them for CacheTTL.
	StrategyCache Strategy = "Cache"
	// StrategyGet reads objects with a GET every time.
	StrategyGet Strategy = "Get"
)

// CacheTTL is how long StrategyCache keeps an object.
const CacheTTL = time.Minute

// ObjectManager gives the configMaps and secrets pods reference. With the
// Watch strategy (kubelet's default): one watch per referenced object,
// field-selected by name (what the Node authorizer lets a node do),
// started when the first pod references it and stopped when the last one
// goes; an immutable object is kept once seen and not watched any more;
// objects no pod registered are read with a GET. With Cache, GETs are
// kept for CacheTTL (a pod registering drops its objects from the cache);
// with Get, every read is a GET.
type ObjectManager struct {
	client   clientset.Interface
	strategy Strategy
	onChange func()
	// syncWait bounds how long a Get waits for a new watch's first list.
	syncWait time.Duration

	mu      sync.Mutex
	pods    map[types.UID][]ObjectRef
	watches map[ObjectRef]*objectWatch
	cache   map[ObjectRef]cachedObject
}

type cachedObject struct {
	obj kruntime.Object
	at  time.Time
}

type objectWatch struct {
	refs   int
	store  cache.Store
	synced func() bool
	cancel context.CancelFunc
	// fixed is an immutable object, kept after its watch stopped.
	fixed kruntime.Object
}

// NewObjectManager returns an ObjectManager on client with strategy (""
// is Watch); onChange (may be nil) is called after a watched object
// changed.
func NewObjectManager(client clientset.Interface, strategy Strategy, onChange func()) *ObjectManager {
	if strategy == "" {
		strategy = StrategyWatch
	}
	return &ObjectManager{client: client, strategy: strategy, onChange: onChange, syncWait: 10 * time.Second,
		pods: map[types.UID][]ObjectRef{}, watches: map[ObjectRef]*objectWatch{}, cache: map[ObjectRef]cachedObject{}}
}

// RegisterPod implements volume.PodObjects.
func (m *ObjectManager) RegisterPod(pod *v1.Pod) {
	refs := PodReferences(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.pods[pod.UID]
	if slices.Equal(old, refs) {
		return
	}
	if m.strategy != StrategyWatch {
		for _, r := range refs {
			delete(m.cache, r)
		}
		m.pods[pod.UID] = refs
		return
	}
	for _, r := range refs {
		w := m.watches[r]
		if w == nil {
			w = m.startWatch(r)
			m.watches[r] = w
		}
		w.refs++
	}
	m.pods[pod.UID] = refs
	m.release(old)
}

// UnregisterPod implements volume.PodObjects.
func (m *ObjectManager) UnregisterPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.strategy == StrategyWatch {
		m.release(m.pods[uid])
	}
	delete(m.pods, uid)
}

// release drops one reference to each of refs; m.mu is held.
func (m *ObjectManager) release(refs []ObjectRef) {
	for _, r := range refs {
		w := m.watches[r]
		if w == nil {
			continue
		}
		if w.refs--; w.refs <= 0 {
			w.cancel()
			delete(m.watches, r)
		}
	}
}

func (m *ObjectManager) listWatch(r ObjectRef) (*cache.ListWatch, kruntime.Object) {
	sel := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	tweak := func(o *metav1.ListOptions) { o.FieldSelector = sel }
	if r.Kind == KindConfigMap {
		return clientset.ListWatch(m.client.ConfigMaps(r.Namespace), tweak), &v1.ConfigMap{}
	}
	return clientset.ListWatch(m.client.Secrets(r.Namespace), tweak), &v1.Secret{}
}

// startWatch starts the watch of r; m.mu is held.
func (m *ObjectManager) startWatch(r ObjectRef) *objectWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &objectWatch{cancel: cancel}
	lw, typ := m.listWatch(r)
	changed := func(obj any) {
		if immutable(obj) {
			m.mu.Lock()
			w.fixed = obj.(kruntime.Object)
			m.mu.Unlock()
			cancel()
		}
		if m.onChange != nil {
			m.onChange()
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, m.client), ObjectType: typ,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { changed(obj) },
			UpdateFunc: func(_, obj any) { changed(obj) },
			DeleteFunc: func(any) {
				if m.onChange != nil {
					m.onChange()
				}
			},
		}})
	w.store, w.synced = store, ctrl.HasSynced
	go ctrl.RunWithContext(ctx)
	return w
}

func immutable(obj any) bool {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *v1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return false
}

// ConfigMap implements volume.Objects and runtime.EnvObjects.
func (m *ObjectManager) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := m.get(ctx, ObjectRef{Kind: KindConfigMap, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// Secret implements volume.Objects and runtime.EnvObjects.
func (m *ObjectManager) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := m.get(ctx, ObjectRef{Kind: KindSecret, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// notFound is kubelet's error for a missing object ("configmap "x" not
// found").
func notFound(r ObjectRef) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: r.Kind}, r.Name)
}

func (m *ObjectManager) get(ctx context.Context, r ObjectRef) (kruntime.Object, error) {
	switch m.strategy {
	case StrategyGet:
		return m.direct(ctx, r)
	case StrategyCache:
		m.mu.Lock()
		c, ok := m.cache[r]
		m.mu.Unlock()
		if ok && time.Since(c.at) < CacheTTL {
			return c.obj, nil
		}
		obj, err := m.direct(ctx, r)
		if err == nil {
			m.mu.Lock()
			m.cache[r] = cachedObject{obj: obj, at: time.Now()}
			m.mu.Unlock()
		}
		return obj, err
	}
	m.mu.Lock()
	w := m.watches[r]
	var fixed kruntime.Object
	if w != nil {
		fixed = w.fixed
	}
	m.mu.Unlock()
	if fixed != nil {
		return fixed, nil
	}
	if w != nil && m.waitSynced(ctx, w) {
		obj, ok, err := w.store.GetByKey(r.Namespace + "/" + r.Name)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, notFound(r)
		}
		return obj.(kruntime.Object), nil
	}
	return m.direct(ctx, r)
}

// direct reads r from the API server.
func (m *ObjectManager) direct(ctx context.Context, r ObjectRef) (kruntime.Object, error) {
	var obj kruntime.Object
	var err error
	if r.Kind == KindConfigMap {
		obj, err = m.client.ConfigMaps(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	} else {
		obj, err = m.client.Secrets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, notFound(r)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	return obj, nil
}

// waitSynced waits for w's first list (bounded by syncWait).
func (m *ObjectManager) waitSynced(ctx context.Context, w *objectWatch) bool {
	deadline := time.Now().Add(m.syncWait)
	for !w.synced() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}
