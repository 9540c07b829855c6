package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/clientset"
)

// The reviews are what k8s.io/apiserver's delegating authenticator and
// authorizer send (TokenReview and SubjectAccessReview through client-go,
// retried with back-off on transient errors, the answers cached), without
// that package's webhook plumbing: its webhook package brings CEL match
// conditions, OpenTelemetry tracing with an OTLP exporter and the
// konnectivity egress dialer into the binary, none of which the kubelet API
// uses (about 9 MB of the binary; see bench/footprint_test.go).

const (
	// sarCacheSize is the number of SubjectAccessReview answers kept (the
	// webhook authorizer's).
	sarCacheSize = 8192
	// maxCachedAttrSize: requests whose attributes are this long or
	// longer are not cached (the webhook authorizer's limit).
	maxCachedAttrSize = 10000
)

// tokenReviewer authenticates a bearer token with a TokenReview. Wrap it
// in k8s.io/apiserver's token cache.
type tokenReviewer struct {
	client  clientset.TokenReviewClient
	backoff wait.Backoff
	timeout time.Duration
}

var _ authenticator.Token = (*tokenReviewer)(nil)

// AuthenticateToken asks the API server who token is. An unauthenticated
// token is (nil, false, nil), or an error with the review's error text.
func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	err := retryTransient(ctx, t.backoff, func() error {
		var err error
		result, err = t.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to make webhook authenticator request")
		return nil, false, err
	}
	st := result.Status
	if !st.Authenticated {
		if st.Error != "" {
			return nil, false, errors.New(st.Error)
		}
		return nil, false, nil
	}
	var extra map[string][]string
	if st.User.Extra != nil {
		extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			extra[k] = v
		}
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups, Extra: extra,
	}}, true, nil
}

// sarAuthorizer decides with a SubjectAccessReview; answers are cached by
// the review's spec, allowed ones for allowTTL, the others for denyTTL. A
// failed review is NoOpinion with the error.
type sarAuthorizer struct {
	client            clientset.SubjectAccessReviewClient
	backoff           wait.Backoff
	allowTTL, denyTTL time.Duration
	cache             *cache.LRUExpireCache
}

func newSARAuthorizer(client clientset.SubjectAccessReviewClient, backoff wait.Backoff, allowTTL, denyTTL time.Duration) *sarAuthorizer {
	return &sarAuthorizer{client: client, backoff: backoff, allowTTL: allowTTL, denyTTL: denyTTL, cache: cache.NewLRUExpireCache(sarCacheSize)}
}

// Authorize implements authorizer.UnconditionalAuthorizer.
func (s *sarAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	spec := reviewSpec(a)
	key, err := json.Marshal(spec)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	var st authorizationv1.SubjectAccessReviewStatus
	if v, ok := s.cache.Get(string(key)); ok {
		st = v.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		var result *authorizationv1.SubjectAccessReview
		err := retryTransient(ctx, s.backoff, func() error {
			var err error
			result, err = s.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to make webhook authorizer request")
			return authorizer.DecisionNoOpinion, "", err
		}
		st = result.Status
		if attrSize(a) < maxCachedAttrSize {
			ttl := s.denyTTL
			if st.Allowed {
				ttl = s.allowTTL
			}
			s.cache.Add(string(key), st, ttl)
		}
	}
	switch {
	case st.Denied && st.Allowed:
		return authorizer.DecisionDeny, st.Reason, errors.New("webhook subject access review returned both allow and deny response")
	case st.Denied:
		return authorizer.DecisionDeny, st.Reason, nil
	case st.Allowed:
		return authorizer.DecisionAllow, st.Reason, nil
	}
	return authorizer.DecisionNoOpinion, st.Reason, nil
}

// reviewSpec is the review of a: the user (name, uid,
// groups, extra) and the resource attributes, or the non-resource path
// and verb.
func reviewSpec(a authorizer.Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if u := a.GetUser(); u != nil {
		spec.User, spec.UID, spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
		if extra := u.GetExtra(); extra != nil {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(extra))
			for k, v := range extra {
				spec.Extra[k] = authorizationv1.ExtraValue(v)
			}
		}
	}
	if a.IsResourceRequest() {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.GetNamespace(), Verb: a.GetVerb(), Group: a.GetAPIGroup(), Version: a.GetAPIVersion(),
			Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.GetPath(), Verb: a.GetVerb()}
	}
	return spec
}

func attrSize(a authorizer.Attributes) int {
	return len(a.GetNamespace()) + len(a.GetVerb()) + len(a.GetAPIGroup()) + len(a.GetAPIVersion()) +
		len(a.GetResource()) + len(a.GetSubresource()) + len(a.GetName()) + len(a.GetPath())
}

// retryTransient calls fn until it succeeds, fails with an error that is
// not transient, or backoff's steps are used up; it returns fn's last
// error.
func retryTransient(ctx context.Context, backoff wait.Backoff, fn func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		last = fn()
		switch {
		case last == nil:
			return true, nil
		case transient(last):
			return false, nil
		}
		return false, last
	})
	switch {
	case last != nil:
		return last
	case err != nil:
		return fmt.Errorf("webhook call failed: %w", err)
	}
	return nil
}

// transient: a reset or lost connection, an internal error, a timeout,
// too many requests, or an answer that asks to retry later.
func transient(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) || apierrors.IsInternalError(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, retry := apierrors.SuggestsClientDelay(err)
	return retry
}
