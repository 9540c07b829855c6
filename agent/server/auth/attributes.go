package auth

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Verb is the authorization verb of an HTTP method, as kubelet maps it:
// POST create, GET get, PUT update, PATCH patch, DELETE delete; any other
// method has no verb ("").
func Verb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// Subresources are the node subresources that may authorize a request to
// path, in the order they are asked: /stats → stats, /metrics → metrics,
// /logs → log, /spec → spec; with kubelet's fine-grained authorization
// /pods and /runningpods → pods, /healthz → healthz, /configz → configz,
// each falling back to proxy; everything else (exec, attach, port-forward,
// containerLogs, run, ...) → proxy.
func Subresources(path string) []string {
	switch {
	case under(path, "/stats"):
		return []string{"stats"}
	case under(path, "/metrics"):
		return []string{"metrics"}
	case under(path, "/logs"):
		return []string{"log"}
	case under(path, "/spec"):
		return []string{"spec"}
	case under(path, "/pods"), under(path, "/runningpods"):
		return []string{"pods", "proxy"}
	case under(path, "/healthz"):
		return []string{"healthz", "proxy"}
	case under(path, "/configz"):
		return []string{"configz", "proxy"}
	}
	return []string{"proxy"}
}

// under reports whether path is prefix or below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Attributes are the authorization questions for request r by u on node
// nodeName, one per subresource of Subresources: any allowed one admits
// the request.
func Attributes(u user.Info, r *http.Request, nodeName string) []authorizer.Attributes {
	path := r.URL.Path
	subs := Subresources(path)
	out := make([]authorizer.Attributes, 0, len(subs))
	for _, sub := range subs {
		out = append(out, authorizer.AttributesRecord{
			User:            u,
			Verb:            Verb(r.Method),
			APIVersion:      "v1",
			Resource:        "nodes",
			Subresource:     sub,
			Name:            nodeName,
			ResourceRequest: true,
			Path:            path,
		})
	}
	return out
}
