package clientset

import (
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
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows the API groups kernelet talks to, and nothing else:
// core/v1, coordination/v1, authentication/v1, authorization/v1,
// node/v1, storage/v1, certificates/v1 and resource/v1 (DRA).
var Scheme = runtime.NewScheme()

// Codecs encodes and decodes Scheme's types (JSON, YAML, protobuf).
var Codecs = serializer.NewCodecFactory(Scheme)

// ParameterCodec encodes list, get, create, ... options as query
// parameters.
var ParameterCodec = runtime.NewParameterCodec(Scheme)

// groups are the API group versions of Scheme, each with its REST path.
var groups = []struct {
	gv      schema.GroupVersion
	apiPath string
	add     func(*runtime.Scheme) error
}{
	{v1.SchemeGroupVersion, "/api", v1.AddToScheme},
	{coordinationv1.SchemeGroupVersion, "/apis", coordinationv1.AddToScheme},
	{authenticationv1.SchemeGroupVersion, "/apis", authenticationv1.AddToScheme},
	{authorizationv1.SchemeGroupVersion, "/apis", authorizationv1.AddToScheme},
	{nodev1.SchemeGroupVersion, "/apis", nodev1.AddToScheme},
	{storagev1.SchemeGroupVersion, "/apis", storagev1.AddToScheme},
	{certificatesv1.SchemeGroupVersion, "/apis", certificatesv1.AddToScheme},
	{resourcev1.SchemeGroupVersion, "/apis", resourcev1.AddToScheme},
}

func init() {
	// The unversioned meta types (Status, WatchEvent, the options).
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	for _, g := range groups {
		utilruntime.Must(g.add(Scheme))
	}
}
