package clientset

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Resource is the typed client of one resource: the verbs of client-go's
// typed clients (same signatures) that kernelet uses.
type Resource[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// Creator is the client of a create-only resource (the reviews).
type Creator[T runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// The typed clients of Interface.
type (
	PodClient                 = Resource[*v1.Pod, *v1.PodList]
	NodeClient                = Resource[*v1.Node, *v1.NodeList]
	ServiceClient             = Resource[*v1.Service, *v1.ServiceList]
	ConfigMapClient           = Resource[*v1.ConfigMap, *v1.ConfigMapList]
	SecretClient              = Resource[*v1.Secret, *v1.SecretList]
	EventClient               = Resource[*v1.Event, *v1.EventList]
	LeaseClient               = Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	RuntimeClassClient        = Resource[*nodev1.RuntimeClass, *nodev1.RuntimeClassList]
	PVCClient                 = Resource[*v1.PersistentVolumeClaim, *v1.PersistentVolumeClaimList]
	PVClient                  = Resource[*v1.PersistentVolume, *v1.PersistentVolumeList]
	CSINodeClient             = Resource[*storagev1.CSINode, *storagev1.CSINodeList]
	CSIDriverClient           = Resource[*storagev1.CSIDriver, *storagev1.CSIDriverList]
	VolumeAttachmentClient    = Resource[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList]
	CSRClient                 = Resource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]
	ResourceClaimClient       = Resource[*resourcev1.ResourceClaim, *resourcev1.ResourceClaimList]
	TokenReviewClient         = Creator[*authenticationv1.TokenReview]
	SubjectAccessReviewClient = Creator[*authorizationv1.SubjectAccessReview]
)

// ServiceAccountClient reads service accounts and requests their tokens
// (the token subresource).
type ServiceAccountClient interface {
	Resource[*v1.ServiceAccount, *v1.ServiceAccountList]
	CreateToken(ctx context.Context, serviceAccountName string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// ResourceSliceClient is the ResourceSlices' client with the collection
// delete kubelet removes a node's (or a DRA driver's) slices with.
type ResourceSliceClient interface {
	Resource[*resourcev1.ResourceSlice, *resourcev1.ResourceSliceList]
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
}

// Interface is what kernelet asks of the API server, resource by
// resource. An empty namespace means all namespaces (list, watch) or
// the object's own (events).
type Interface interface {
	Pods(namespace string) PodClient
	Nodes() NodeClient
	Services(namespace string) ServiceClient
	ConfigMaps(namespace string) ConfigMapClient
	Secrets(namespace string) SecretClient
	ServiceAccounts(namespace string) ServiceAccountClient
	Events(namespace string) EventClient
	Leases(namespace string) LeaseClient
	RuntimeClasses() RuntimeClassClient
	PersistentVolumeClaims(namespace string) PVCClient
	PersistentVolumes() PVClient
	CSINodes() CSINodeClient
	CSIDrivers() CSIDriverClient
	VolumeAttachments() VolumeAttachmentClient
	TokenReviews() TokenReviewClient
	SubjectAccessReviews() SubjectAccessReviewClient
	CertificateSigningRequests() CSRClient
	ResourceClaims(namespace string) ResourceClaimClient
	ResourceSlices() ResourceSliceClient
}

// Clientset implements Interface over one HTTP client and one client-side
// rate limit shared by every group, as client-go's clientset does.
type Clientset struct {
	rest map[schema.GroupVersion]rest.Interface
}

var _ Interface = (*Clientset)(nil)

// NewForConfig builds a Clientset and its HTTP client from cfg.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	return NewForConfigAndClient(cfg, hc)
}

// NewForConfigAndClient builds a Clientset whose requests go through hc.
// A positive QPS without a rate limiter needs a positive Burst.
func NewForConfigAndClient(cfg *rest.Config, hc *http.Client) (*Clientset, error) {
	shared := *cfg
	if shared.RateLimiter == nil && shared.QPS > 0 {
		if shared.Burst <= 0 {
			return nil, fmt.Errorf("burst must be greater than 0 when qps (%v) is", shared.QPS)
		}
		shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shared.QPS, shared.Burst)
	}
	cs := &Clientset{rest: make(map[schema.GroupVersion]rest.Interface, len(groups))}
	for _, g := range groups {
		c := shared
		gv := g.gv
		c.GroupVersion = &gv
		c.APIPath = g.apiPath
		c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(&c, hc)
		if err != nil {
			return nil, fmt.Errorf("%s client: %w", gv, err)
		}
		cs.rest[gv] = rc
	}
	return cs, nil
}

// newResource is the typed client of resource in the group of T.
func newResource[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](cs *Clientset, gv schema.GroupVersion, resource, namespace string, obj func() T, list func() L) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList(resource, cs.rest[gv], ParameterCodec, namespace, obj, list, gentype.PrefersProtobuf[T]())
}

// Pods is the pods of namespace.
func (cs *Clientset) Pods(namespace string) PodClient {
	return newResource(cs, v1.SchemeGroupVersion, "pods", namespace, func() *v1.Pod { return &v1.Pod{} }, func() *v1.PodList { return &v1.PodList{} })
}

// Nodes is the nodes.
func (cs *Clientset) Nodes() NodeClient {
	return newResource(cs, v1.SchemeGroupVersion, "nodes", "", func() *v1.Node { return &v1.Node{} }, func() *v1.NodeList { return &v1.NodeList{} })
}

// Services is the services of namespace.
func (cs *Clientset) Services(namespace string) ServiceClient {
	return newResource(cs, v1.SchemeGroupVersion, "services", namespace, func() *v1.Service { return &v1.Service{} }, func() *v1.ServiceList { return &v1.ServiceList{} })
}

// ConfigMaps is the config maps of namespace.
func (cs *Clientset) ConfigMaps(namespace string) ConfigMapClient {
	return newResource(cs, v1.SchemeGroupVersion, "configmaps", namespace, func() *v1.ConfigMap { return &v1.ConfigMap{} }, func() *v1.ConfigMapList { return &v1.ConfigMapList{} })
}

// Secrets is the secrets of namespace.
func (cs *Clientset) Secrets(namespace string) SecretClient {
	return newResource(cs, v1.SchemeGroupVersion, "secrets", namespace, func() *v1.Secret { return &v1.Secret{} }, func() *v1.SecretList { return &v1.SecretList{} })
}

// Events is the core/v1 events of namespace.
func (cs *Clientset) Events(namespace string) EventClient {
	return newResource(cs, v1.SchemeGroupVersion, "events", namespace, func() *v1.Event { return &v1.Event{} }, func() *v1.EventList { return &v1.EventList{} })
}

// Leases is the Leases of namespace.
func (cs *Clientset) Leases(namespace string) LeaseClient {
	return newResource(cs, coordinationv1.SchemeGroupVersion, "leases", namespace, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

// RuntimeClasses is the RuntimeClasses.
func (cs *Clientset) RuntimeClasses() RuntimeClassClient {
	return newResource(cs, nodev1.SchemeGroupVersion, "runtimeclasses", "", func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} }, func() *nodev1.RuntimeClassList { return &nodev1.RuntimeClassList{} })
}

// PersistentVolumeClaims is the claims of namespace.
func (cs *Clientset) PersistentVolumeClaims(namespace string) PVCClient {
	return newResource(cs, v1.SchemeGroupVersion, "persistentvolumeclaims", namespace, func() *v1.PersistentVolumeClaim { return &v1.PersistentVolumeClaim{} }, func() *v1.PersistentVolumeClaimList { return &v1.PersistentVolumeClaimList{} })
}

// PersistentVolumes is the persistent volumes.
func (cs *Clientset) PersistentVolumes() PVClient {
	return newResource(cs, v1.SchemeGroupVersion, "persistentvolumes", "", func() *v1.PersistentVolume { return &v1.PersistentVolume{} }, func() *v1.PersistentVolumeList { return &v1.PersistentVolumeList{} })
}

// CSINodes is the CSINodes.
func (cs *Clientset) CSINodes() CSINodeClient {
	return newResource(cs, storagev1.SchemeGroupVersion, "csinodes", "", func() *storagev1.CSINode { return &storagev1.CSINode{} }, func() *storagev1.CSINodeList { return &storagev1.CSINodeList{} })
}

// CSIDrivers is the CSIDrivers.
func (cs *Clientset) CSIDrivers() CSIDriverClient {
	return newResource(cs, storagev1.SchemeGroupVersion, "csidrivers", "", func() *storagev1.CSIDriver { return &storagev1.CSIDriver{} }, func() *storagev1.CSIDriverList { return &storagev1.CSIDriverList{} })
}

// VolumeAttachments is the VolumeAttachments.
func (cs *Clientset) VolumeAttachments() VolumeAttachmentClient {
	return newResource(cs, storagev1.SchemeGroupVersion, "volumeattachments", "", func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} }, func() *storagev1.VolumeAttachmentList { return &storagev1.VolumeAttachmentList{} })
}

// CertificateSigningRequests is the CertificateSigningRequests (TLS
// bootstrap and certificate rotation).
func (cs *Clientset) CertificateSigningRequests() CSRClient {
	return newResource(cs, certificatesv1.SchemeGroupVersion, "certificatesigningrequests", "",
		func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		func() *certificatesv1.CertificateSigningRequestList {
			return &certificatesv1.CertificateSigningRequestList{}
		})
}

// TokenReviews creates TokenReviews.
func (cs *Clientset) TokenReviews() TokenReviewClient {
	return gentype.NewClient("tokenreviews", cs.rest[authenticationv1.SchemeGroupVersion], ParameterCodec, "",
		func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} }, gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

// SubjectAccessReviews creates SubjectAccessReviews.
func (cs *Clientset) SubjectAccessReviews() SubjectAccessReviewClient {
	return gentype.NewClient("subjectaccessreviews", cs.rest[authorizationv1.SchemeGroupVersion], ParameterCodec, "",
		func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} }, gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

// ServiceAccounts is the service accounts of namespace.
func (cs *Clientset) ServiceAccounts(namespace string) ServiceAccountClient {
	return serviceAccounts{newResource(cs, v1.SchemeGroupVersion, "serviceaccounts", namespace,
		func() *v1.ServiceAccount { return &v1.ServiceAccount{} }, func() *v1.ServiceAccountList { return &v1.ServiceAccountList{} })}
}

type serviceAccounts struct {
	*gentype.ClientWithList[*v1.ServiceAccount, *v1.ServiceAccountList]
}

// CreateToken requests a token for the service account (POST
// .../serviceaccounts/<name>/token).
func (c serviceAccounts) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	err := c.GetClient().Post().UseProtobufAsDefault().
		Namespace(c.GetNamespace()).Resource("serviceaccounts").Name(name).SubResource("token").
		VersionedParams(&opts, ParameterCodec).Body(tr).Do(ctx).Into(out)
	return out, err
}

// ResourceClaims is the DRA ResourceClaims of namespace.
func (cs *Clientset) ResourceClaims(namespace string) ResourceClaimClient {
	return newResource(cs, resourcev1.SchemeGroupVersion, "resourceclaims", namespace,
		func() *resourcev1.ResourceClaim { return &resourcev1.ResourceClaim{} }, func() *resourcev1.ResourceClaimList { return &resourcev1.ResourceClaimList{} })
}

// ResourceSlices is the DRA ResourceSlices.
func (cs *Clientset) ResourceSlices() ResourceSliceClient {
	return newResource(cs, resourcev1.SchemeGroupVersion, "resourceslices", "",
		func() *resourcev1.ResourceSlice { return &resourcev1.ResourceSlice{} }, func() *resourcev1.ResourceSliceList { return &resourcev1.ResourceSliceList{} })
}
