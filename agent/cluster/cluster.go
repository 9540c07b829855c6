package cluster

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/sources"
	"github.com/kernelet/kernelet/internal/clientset"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// Cluster is the agent's side of the API server: the clients, the
// informers over this node's pods and its Node, and the pod status
// manager. It exists only with a kubeconfig.
type Cluster struct {
	nodeName string
	clients  *kubeclient.Clients
	// podInformer watches this node's pods, nodeInformer its Node,
	// svcInformer every service (containers get service variables). They
	// are client-go shared informers over internal/clientset's list and
	// watch: the informer factory would link the full clientset.
	podInformer, nodeInformer, svcInformer cache.SharedIndexInformer
	nodeLister                             corelisters.NodeLister
	// rcInformer holds the RuntimeClasses (runtimeClassName).
	rcInformer cache.SharedIndexInformer
	rcLister   nodelisters.RuntimeClassLister
	status     *statuspods.Manager
}

// PodStatus is the pod status manager: pod statuses, mirror pods and
// deletions written to the API server.
func (c *Cluster) PodStatus() *statuspods.Manager { return c.status }

// PodSource is the API server's pod source: this node's pods, from the
// pod informer.
func (c *Cluster) PodSource() sources.Source { return sources.NewAPISource(c.podInformer) }

// New builds the informers and the pod status manager; nothing
// talks to the API server before run.
func New(nodeName string, clients *kubeclient.Clients) (*Cluster, error) {
	c := &Cluster{nodeName: nodeName, clients: clients}
	nsIndex := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	api := clients.Main
	c.podInformer = cache.NewSharedIndexInformer(clientset.ListWatch(api.Pods(metav1.NamespaceAll),
		func(o *metav1.ListOptions) { o.FieldSelector = sources.NodePodsSelector(nodeName) }), &v1.Pod{}, 0, nsIndex)
	c.nodeInformer = cache.NewSharedIndexInformer(clientset.ListWatch(api.Nodes(),
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
		}), &v1.Node{}, 0, nsIndex)
	c.svcInformer = cache.NewSharedIndexInformer(clientset.ListWatch(api.Services(metav1.NamespaceAll), nil), &v1.Service{}, 0, nsIndex)
	c.nodeLister = corelisters.NewNodeLister(c.nodeInformer.GetIndexer())
	c.rcInformer = cache.NewSharedIndexInformer(clientset.ListWatch(api.RuntimeClasses(), nil), &nodev1.RuntimeClass{}, 0, cache.Indexers{})
	c.rcLister = nodelisters.NewRuntimeClassLister(c.rcInformer.GetIndexer())
	var err error
	c.status, err = statuspods.New(statuspods.Config{Client: clients.Main, Pods: corelisters.NewPodLister(c.podInformer.GetIndexer()),
		NodeName: nodeName, NodeUID: c.nodeUID})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Node is this node's Node as last seen, nil while unknown.
func (c *Cluster) Node() *v1.Node {
	n, err := c.nodeLister.Get(c.nodeName)
	if err != nil {
		return nil
	}
	return n
}

func (c *Cluster) nodeUID() types.UID {
	if n := c.Node(); n != nil {
		return n.UID
	}
	return ""
}

// Run starts the informers and the pod status manager until ctx is done.
func (c *Cluster) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	log.Info("Joining the cluster", "apiServer", c.clients.Host, "node", c.nodeName)
	// A mirror pod that changes (deleted by a user, say) or a pod the
	// API server deletes is the status manager's to handle at once.
	if _, err := c.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.status.Wake() },
		UpdateFunc: func(any, any) { c.status.Wake() },
		DeleteFunc: func(any) { c.status.Wake() },
	}); err != nil {
		log.Error(err, "Pod informer handler")
	}
	var wg sync.WaitGroup
	for _, inf := range []cache.SharedIndexInformer{c.podInformer, c.nodeInformer, c.svcInformer, c.rcInformer} {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	wg.Go(func() { c.status.Run(ctx) })
	wg.Wait()
}

// errServicesNotRead is kubelet's error while the service list has never
// been read: a container started now would miss its service variables.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

// errRuntimeClassesNotRead: a pod naming a RuntimeClass waits until the
// RuntimeClasses were listed once (else it would be refused as missing).
var errRuntimeClassesNotRead = errors.New("RuntimeClasses have not yet been read at least once")

// RuntimeClass is a RuntimeClass by name (podconfig.RuntimeClassGetter).
func (c *Cluster) RuntimeClass(name string) (*nodev1.RuntimeClass, error) {
	if !c.rcInformer.HasSynced() {
		return nil, errRuntimeClassesNotRead
	}
	return c.rcLister.Get(name)
}

// Services are every service of the cluster, for service variables.
func (c *Cluster) Services() ([]*v1.Service, error) {
	if !c.svcInformer.HasSynced() {
		return nil, errServicesNotRead
	}
	objs := c.svcInformer.GetStore().List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok {
			out = append(out, s)
		}
	}
	return out, nil
}
