package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// fastBackoff keeps retries in tests short.
var fastBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 5}

// reviewServer answers TokenReviews (token "good" is user u in group g,
// "bad" is unauthenticated with an error) and SubjectAccessReviews
// (allowed only for subresource "pods"), counting the requests; the first
// `failures` answers of each kind are internal errors.
type reviewServer struct {
	tokenReviews, sars int
	failures           int
	lastSAR            authorizationv1.SubjectAccessReviewSpec
}

func (s *reviewServer) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.tokenReviews++
		if s.tokenReviews <= s.failures {
			return true, nil, apierrors.NewInternalError(context.DeadlineExceeded)
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		switch tr.Spec.Token {
		case "good":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: "u", UID: "1", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		case "bad":
			tr.Status = authenticationv1.TokenReviewStatus{Error: "token expired"}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.sars++
		if s.sars <= s.failures {
			return true, nil, apierrors.NewTooManyRequests("slow down", 0)
		}
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		s.lastSAR = sar.Spec
		sar.Status.Allowed = sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Subresource == "pods"
		if !sar.Status.Allowed {
			sar.Status.Reason = "no"
		}
		return true, sar, nil
	})
	return c
}

func webhookAuth(t *testing.T, srv *reviewServer, anonymous bool) *Auth {
	t.Helper()
	a, err := New(Config{NodeName: "node-1",
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: boolp(true), CacheTTL: metav1.Duration{Duration: time.Minute}},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: boolp(anonymous)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletv1beta1.KubeletWebhookAuthorization{CacheAuthorizedTTL: metav1.Duration{Duration: time.Minute}, CacheUnauthorizedTTL: metav1.Duration{Duration: time.Minute}}},
		Client: clientsettest.FromClientset(srv.client())})
	if err != nil {
		t.Fatal(err)
	}
	// Short retries for the tests.
	if s, ok := a.authz.(*sarAuthorizer); ok {
		s.backoff = fastBackoff
	}
	return a
}

func TestWebhookReviews(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("served")) })
	get := func(a *Auth, path, token string) (int, string) {
		r := httptest.NewRequest("GET", path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		a.Wrap(ok).ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}

	srv := &reviewServer{}
	a := webhookAuth(t, srv, false)
	if code, body := get(a, "/pods", "good"); code != 200 || body != "served" {
		t.Errorf("good token, /pods = %d %q", code, body)
	}
	want := authorizationv1.SubjectAccessReviewSpec{User: "u", UID: "1", Groups: []string{"g", "system:authenticated"},
		Extra:              map[string]authorizationv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "pods", Name: "node-1"}}
	if got := srv.lastSAR; got.User != want.User || got.UID != want.UID || len(got.Groups) != 2 || got.Groups[1] != want.Groups[1] ||
		got.Extra["k"][0] != "v" || *got.ResourceAttributes != *want.ResourceAttributes || got.NonResourceAttributes != nil {
		t.Errorf("SubjectAccessReview spec %+v (%+v), want %+v (%+v)", got, got.ResourceAttributes, want, want.ResourceAttributes)
	}
	// Both answers are cached: the same requests again ask nothing.
	if code, body := get(a, "/exec/ns/p/c", "good"); code != 403 || body != "Forbidden (user=u, verb=get, resource=nodes, subresource(s)=[proxy])" {
		t.Errorf("good token, /exec = %d %q", code, body)
	}
	tr, sars := srv.tokenReviews, srv.sars
	get(a, "/pods", "good")
	get(a, "/exec/ns/p/c", "good")
	if srv.tokenReviews != tr || srv.sars != sars {
		t.Errorf("cached answers asked again: token reviews %d → %d, SARs %d → %d", tr, srv.tokenReviews, sars, srv.sars)
	}
	if code, body := get(a, "/pods", "bad"); code != 401 || body != "Unauthorized" {
		t.Errorf("bad token = %d %q", code, body)
	}
	if code, body := get(a, "/pods", ""); code != 401 || body != "Unauthorized" {
		t.Errorf("no token, anonymous off = %d %q", code, body)
	}

	// Anonymous on: no credentials is system:anonymous; a bad token is
	// still 401 (the token authenticator's error is not overridden).
	anon := webhookAuth(t, &reviewServer{}, true)
	if code, body := get(anon, "/exec/ns/p/c", ""); code != 403 || body != "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])" {
		t.Errorf("anonymous /exec = %d %q", code, body)
	}
	if code, _ := get(anon, "/pods", "bad"); code != 401 {
		t.Errorf("anonymous on, bad token = %d, want 401", code)
	}
}

// Transient errors (internal error, too many requests) are retried.
func TestWebhookRetries(t *testing.T) {
	srv := &reviewServer{failures: 2}
	c := srv.client()
	tokens := &tokenReviewer{client: c.AuthenticationV1().TokenReviews(), backoff: fastBackoff}
	resp, ok, err := tokens.AuthenticateToken(t.Context(), "good")
	if err != nil || !ok || resp.User.GetName() != "u" {
		t.Errorf("token review after 2 failures = %v %v %v", resp, ok, err)
	}
	sar := newSARAuthorizer(c.AuthorizationV1().SubjectAccessReviews(), fastBackoff, time.Minute, time.Minute)
	attrs := webhookAttrs()
	if d, _, err := sar.Authorize(t.Context(), attrs); err != nil || d.String() != "Allow" {
		t.Errorf("SAR after 2 failures = %v %v", d, err)
	}
	// Used-up retries return the last error.
	srv = &reviewServer{failures: 10}
	c = srv.client()
	sar = newSARAuthorizer(c.AuthorizationV1().SubjectAccessReviews(), fastBackoff, time.Minute, time.Minute)
	if _, _, err := sar.Authorize(t.Context(), attrs); !apierrors.IsTooManyRequests(err) {
		t.Errorf("SAR failing = %v, want the last error", err)
	}
	if srv.sars != fastBackoff.Steps {
		t.Errorf("SAR asked %d times, want %d", srv.sars, fastBackoff.Steps)
	}
}

func webhookAttrs() authorizer.Attributes {
	return Attributes(nil, httptest.NewRequest("GET", "/pods", nil), "node-1")[0]
}
