package clientsettest

import (
	"k8s.io/client-go/kubernetes"

	"github.com/kernelet/kernelet/internal/clientset"
)

// FromClientset is cs as a clientset.Interface.
func FromClientset(cs kubernetes.Interface) clientset.Interface { return adapter{cs} }

type adapter struct{ cs kubernetes.Interface }

func (a adapter) Pods(ns string) clientset.PodClient { return a.cs.CoreV1().Pods(ns) }
func (a adapter) Nodes() clientset.NodeClient        { return a.cs.CoreV1().Nodes() }
func (a adapter) Services(ns string) clientset.ServiceClient {
	return a.cs.CoreV1().Services(ns)
}
func (a adapter) ConfigMaps(ns string) clientset.ConfigMapClient {
	return a.cs.CoreV1().ConfigMaps(ns)
}
func (a adapter) Secrets(ns string) clientset.SecretClient { return a.cs.CoreV1().Secrets(ns) }
func (a adapter) ServiceAccounts(ns string) clientset.ServiceAccountClient {
	return a.cs.CoreV1().ServiceAccounts(ns)
}
func (a adapter) Events(ns string) clientset.EventClient { return a.cs.CoreV1().Events(ns) }
func (a adapter) Leases(ns string) clientset.LeaseClient {
	return a.cs.CoordinationV1().Leases(ns)
}
func (a adapter) RuntimeClasses() clientset.RuntimeClassClient { return a.cs.NodeV1().RuntimeClasses() }
func (a adapter) PersistentVolumeClaims(ns string) clientset.PVCClient {
	return a.cs.CoreV1().PersistentVolumeClaims(ns)
}
func (a adapter) PersistentVolumes() clientset.PVClient { return a.cs.CoreV1().PersistentVolumes() }
func (a adapter) CSINodes() clientset.CSINodeClient     { return a.cs.StorageV1().CSINodes() }
func (a adapter) CSIDrivers() clientset.CSIDriverClient { return a.cs.StorageV1().CSIDrivers() }
func (a adapter) VolumeAttachments() clientset.VolumeAttachmentClient {
	return a.cs.StorageV1().VolumeAttachments()
}
func (a adapter) TokenReviews() clientset.TokenReviewClient {
	return a.cs.AuthenticationV1().TokenReviews()
}
func (a adapter) CertificateSigningRequests() clientset.CSRClient {
	return a.cs.CertificatesV1().CertificateSigningRequests()
}
func (a adapter) SubjectAccessReviews() clientset.SubjectAccessReviewClient {
	return a.cs.AuthorizationV1().SubjectAccessReviews()
}
func (a adapter) ResourceClaims(ns string) clientset.ResourceClaimClient {
	return a.cs.ResourceV1().ResourceClaims(ns)
}
func (a adapter) ResourceSlices() clientset.ResourceSliceClient {
	return a.cs.ResourceV1().ResourceSlices()
}
