// Package auth authenticates and authorizes requests to the kubelet API
// (the secure port) as kubelet does: x509 client certificates against the
// configured client CA, bearer tokens through the API server's TokenReview,
// anonymous requests as system:anonymous when allowed; then AlwaysAllow or a
// SubjectAccessReview on the node (resource nodes, a subresource chosen by
// the request path, the verb by the HTTP method).
//
// The building blocks are k8s.io/apiserver's delegating authenticator and
// authorizer (with their caches); this package maps requests to
// authorization attributes (a pure function) and writes kubelet's 401 and
// 403 answers. It knows nothing of the endpoints it guards.
package auth
