package agent

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	nodelisters "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/sources"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// cluster is the agent's side of the API server: the clients, the
// informers over this node's pods and its Node, and the pod status
// manager. It exists only with a kubeconfig.
type cluster struct {
	nodeName    string
	clients     *kubeclient.Clients
	podFactory  informers.SharedInformerFactory
	nodeFactory informers.SharedInformerFactory
	// svcFactory lists every service: containers get service variables.
	svcFactory  informers.SharedInformerFactory
	svcInformer cache.SharedIndexInformer
	podInformer cache.SharedIndexInformer
	nodeLister  corelisters.NodeLister
	// rcInformer holds the RuntimeClasses (on svcFactory).
	rcInformer cache.SharedIndexInformer
	rcLister   nodelisters.RuntimeClassLister
	status     *statuspods.Manager
}

// newCluster builds the informers and the pod status manager; nothing
// talks to the API server before run.
func newCluster(nodeName string, clients *kubeclient.Clients) (*cluster, error) {
	c := &cluster{nodeName: nodeName, clients: clients}
	c.podFactory = informers.NewSharedInformerFactoryWithOptions(clients.Main, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sources.NodePodsSelector(nodeName) }))
	c.nodeFactory = informers.NewSharedInformerFactoryWithOptions(clients.Main, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
		}))
	c.svcFactory = informers.NewSharedInformerFactory(clients.Main, 0)
	c.svcInformer = c.svcFactory.Core().V1().Services().Informer()
	rcs := c.svcFactory.Node().V1().RuntimeClasses()
	c.rcInformer, c.rcLister = rcs.Informer(), rcs.Lister()
	podInf := c.podFactory.Core().V1().Pods()
	c.podInformer = podInf.Informer()
	c.nodeLister = c.nodeFactory.Core().V1().Nodes().Lister()
	var err error
	c.status, err = statuspods.New(statuspods.Config{Client: clients.Main, Pods: podInf.Lister(),
		NodeName: nodeName, NodeUID: c.nodeUID})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// node is this node's Node as last seen, nil while unknown.
func (c *cluster) node() *v1.Node {
	n, err := c.nodeLister.Get(c.nodeName)
	if err != nil {
		return nil
	}
	return n
}

func (c *cluster) nodeUID() types.UID {
	if n := c.node(); n != nil {
		return n.UID
	}
	return ""
}

// run starts the informers and the pod status manager until ctx is done.
func (c *cluster) run(ctx context.Context) {
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
	c.podFactory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	c.svcFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { c.status.Run(ctx) })
	<-ctx.Done()
	c.podFactory.Shutdown()
	c.nodeFactory.Shutdown()
	c.svcFactory.Shutdown()
	wg.Wait()
}

// errServicesNotRead is kubelet's error while the service list has never
// been read: a container started now would miss its service variables.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

// errRuntimeClassesNotRead: a pod naming a RuntimeClass waits until the
// RuntimeClasses were listed once (else it would be refused as missing).
var errRuntimeClassesNotRead = errors.New("RuntimeClasses have not yet been read at least once")

// runtimeClass is a RuntimeClass by name (runtime.RuntimeClassGetter).
func (c *cluster) runtimeClass(name string) (*nodev1.RuntimeClass, error) {
	if !c.rcInformer.HasSynced() {
		return nil, errRuntimeClassesNotRead
	}
	return c.rcLister.Get(name)
}

// services are every service of the cluster, for service variables.
func (c *cluster) services() ([]*v1.Service, error) {
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
