// Package auth authenticates and authorizes requests to the kubelet API
// (the secure port) as kubelet does: x509 client certificates against the
// configured client CA, bearer tokens through the API server's TokenReview,
// anonymous requests as system:anonymous when allowed; then AlwaysAllow or a
// SubjectAccessReview on the node (resource nodes, a subresource chosen by
// the request path, the verb by the HTTP method).
//
// The building blocks are k8s.io/apiserver's request authenticators (x509,
// bearer token and WebSocket protocol, union, authenticated group,
// anonymous) and token cache, composed as its delegating authenticator
// composes them. The x509 authenticator verifies against ClientCA, the
// clientCAFile reloaded when it changes (fsnotify, and once a minute);
// apiserver's dynamiccertificates would link client-go's informers and
// full clientset. The TokenReview and SubjectAccessReview are sent with
// internal/clientset's typed clients, retried on
// transient errors and cached (apimachinery's LRU expiring cache) as
// k8s.io/apiserver's webhook authenticator and authorizer do. The delegating
// factories themselves are not used: their webhook package links CEL,
// OpenTelemetry's SDK and exporter and the konnectivity dialer into the
// binary (cmd/kernelet's TestFootprintDependencies keeps them out). This
// package maps requests to authorization attributes (a pure function) and
// writes kubelet's 401 and 403 answers. It knows nothing of the endpoints
// it guards.
package auth
