package auth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestSubresourcesAndVerb(t *testing.T) {
	cases := map[string]struct {
		method, path string
		verb         string
		subs         []string
	}{
		"stats summary":      {"GET", "/stats/summary", "get", []string{"stats"}},
		"stats":              {"GET", "/stats", "get", []string{"stats"}},
		"statsfoo is proxy":  {"GET", "/statsfoo", "get", []string{"proxy"}},
		"dashboard is proxy": {"GET", "/dashboard/api/events", "get", []string{"proxy"}},
		"metrics":            {"GET", "/metrics", "get", []string{"metrics"}},
		"metrics cadvisor":   {"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		"node logs":          {"GET", "/logs/syslog", "get", []string{"log"}},
		"spec":               {"GET", "/spec/", "get", []string{"spec"}},
		"pods":               {"GET", "/pods", "get", []string{"pods", "proxy"}},
		"runningpods":        {"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		"healthz":            {"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		"healthz check":      {"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		"configz":            {"GET", "/configz", "get", []string{"configz", "proxy"}},
		"exec post":          {"POST", "/exec/ns/pod/c", "create", []string{"proxy"}},
		"container logs":     {"GET", "/containerLogs/ns/pod/c", "get", []string{"proxy"}},
		"container logs put": {"PUT", "/containerLogs/ns/pod/c", "update", []string{"proxy"}},
		"patch":              {"PATCH", "/x", "patch", []string{"proxy"}},
		"delete":             {"DELETE", "/x", "delete", []string{"proxy"}},
		"head has no verb":   {"HEAD", "/pods", "", []string{"pods", "proxy"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			attrs := Attributes(&user.DefaultInfo{Name: "u"}, r, "node-1")
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.GetSubresource())
				if a.GetVerb() != tc.verb || a.GetResource() != "nodes" || a.GetName() != "node-1" ||
					a.GetAPIVersion() != "v1" || a.GetAPIGroup() != "" || !a.IsResourceRequest() || a.GetPath() != tc.path {
					t.Errorf("attributes %+v", a)
				}
			}
			if !slices.Equal(subs, tc.subs) {
				t.Errorf("subresources %v, want %v", subs, tc.subs)
			}
		})
	}
}

// onlyAuthorizer allows only one subresource.
type onlyAuthorizer string

func (o onlyAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetSubresource() == string(o) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no", nil
}

func boolp(b bool) *bool { return &b }

func TestWrap(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	anonAllow, err := New(Config{NodeName: "node-1",
		Authentication: kubeletv1beta1.KubeletAuthentication{Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: boolp(true)}},
		Authorization:  kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}})
	if err != nil {
		t.Fatal(err)
	}
	noAnon, err := New(Config{NodeName: "node-1",
		Authentication: kubeletv1beta1.KubeletAuthentication{Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: boolp(false)}},
		Authorization:  kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}})
	if err != nil {
		t.Fatal(err)
	}
	anonDeny := *anonAllow
	anonDeny.authz = authorizerfactory.NewAlwaysDenyAuthorizer()
	anonPods := *anonAllow
	anonPods.authz = onlyAuthorizer("pods")

	cases := map[string]struct {
		a        *Auth
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		"anonymous allowed":     {anonAllow, "GET", "/pods", 200, "served"},
		"no credentials":        {noAnon, "GET", "/pods", 401, "Unauthorized"},
		"denied":                {&anonDeny, "POST", "/exec/ns/p/c", 403, "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])"},
		"denied both":           {&anonDeny, "GET", "/pods", 403, "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		"fine-grained pods":     {&anonPods, "GET", "/pods", 200, "served"},
		"fine-grained not exec": {&anonPods, "GET", "/exec/ns/p/c", 403, "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.a.Wrap(ok).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestNewRefusesWebhookWithoutClient(t *testing.T) {
	_, err := New(Config{Authentication: kubeletv1beta1.KubeletAuthentication{Webhook: kubeletv1beta1.KubeletWebhookAuthentication{Enabled: boolp(true)}},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}})
	if err == nil {
		t.Fatal("webhook authentication without a client must fail")
	}
	_, err = New(Config{Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook}})
	if err == nil {
		t.Fatal("webhook authorization without a client must fail")
	}
}
