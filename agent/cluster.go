package agent

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
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
	podInformer cache.SharedIndexInformer
	nodeLister  corelisters.NodeLister
	status      *statuspods.Manager
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
	var wg sync.WaitGroup
	wg.Go(func() { c.status.Run(ctx) })
	<-ctx.Done()
	c.podFactory.Shutdown()
	c.nodeFactory.Shutdown()
	wg.Wait()
}
