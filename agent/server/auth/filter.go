package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Auth guards a handler: authentication, then authorization.
type Auth struct {
	nodeName string
	authn    authenticator.Request
	authz    authorizer.UnconditionalAuthorizer
	clientCA *ClientCA
}

// webhookTimeout bounds one TokenReview or SubjectAccessReview.
const webhookTimeout = 10 * time.Second

// webhookBackoff retries a failed review (k8s.io/apiserver's default).
func webhookBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// New builds the authenticator and authorizer cfg describes, as kubelet
// composes them: x509 client certificates, then bearer tokens through a
// cached TokenReview (also in a WebSocket protocol header); an
// authenticated user gets the group system:authenticated; anonymous
// requests, when enabled, are system:anonymous. A webhook mode without a
// client is ErrNoClient; an unreadable client CA file is an error. Run
// must be called for the client CA file to be reloaded.
func New(cfg Config) (*Auth, error) {
	a := &Auth{nodeName: cfg.NodeName}
	an := cfg.Authentication
	var authns []authenticator.Request
	if f := an.X509.ClientCAFile; f != "" {
		ca, err := NewClientCA(f)
		if err != nil {
			return nil, fmt.Errorf("authentication.x509.clientCAFile: %w", err)
		}
		a.clientCA = ca
		authns = append(authns, x509.NewDynamic(ca.VerifyOptions, x509.CommonNameUserConversion))
	}
	if an.Webhook.Enabled != nil && *an.Webhook.Enabled {
		if cfg.Client == nil {
			return nil, fmt.Errorf("authentication.webhook.enabled: %w", ErrNoClient)
		}
		reviewer := &tokenReviewer{client: cfg.Client.TokenReviews(), backoff: webhookBackoff(), timeout: webhookTimeout}
		ttl := an.Webhook.CacheTTL.Duration
		tokens := tokencache.New(reviewer, false, ttl, ttl)
		authns = append(authns, bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
	}
	anonymousOn := an.Anonymous.Enabled != nil && *an.Anonymous.Enabled
	switch {
	case len(authns) > 0:
		a.authn = group.NewAuthenticatedGroupAdder(union.New(authns...))
		if anonymousOn {
			a.authn = union.NewFailOnError(a.authn, anonymous.NewAuthenticator(nil))
		}
	case anonymousOn:
		a.authn = anonymous.NewAuthenticator(nil)
	default:
		// No method at all: every request is unauthenticated.
		a.authn = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	}

	az := cfg.Authorization
	switch az.Mode {
	case kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow:
		a.authz = alwaysAllow
	case kubeletv1beta1.KubeletAuthorizationModeWebhook:
		if cfg.Client == nil {
			return nil, fmt.Errorf("authorization.mode Webhook: %w", ErrNoClient)
		}
		a.authz = newSARAuthorizer(cfg.Client.SubjectAccessReviews(), webhookBackoff(),
			az.Webhook.CacheAuthorizedTTL.Duration, az.Webhook.CacheUnauthorizedTTL.Duration)
	default:
		return nil, fmt.Errorf("authorization.mode: unknown mode %q", az.Mode)
	}
	return a, nil
}

// alwaysAllow is the AlwaysAllow mode.
var alwaysAllow = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// Run reloads the client CA file when it changes, until ctx is done.
func (a *Auth) Run(ctx context.Context) {
	if a.clientCA == nil {
		return
	}
	a.clientCA.Run(ctx)
}

// Wrap returns h behind authentication and authorization. A request
// without valid credentials (and anonymous access off) gets 401
// "Unauthorized"; one whose user is not allowed any subresource of its
// path gets 403 "Forbidden (user=..., verb=..., resource=nodes,
// subresource(s)=[...])"; a failing review is a 500.
func (a *Auth) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := klog.FromContext(r.Context())
		resp, ok, err := a.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				log.V(2).Info("Unable to authenticate the request", "err", err, "path", r.URL.Path)
			}
			writeText(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := Attributes(resp.User, r, a.nodeName)
		var subs []string
		for _, at := range attrs {
			subs = append(subs, at.GetSubresource())
			decision, reason, err := a.authz.Authorize(r.Context(), at)
			if err != nil {
				log.Error(err, "Authorization error", "user", resp.User.GetName(), "verb", at.GetVerb(), "resource", at.GetResource(), "subresource", at.GetSubresource())
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					resp.User.GetName(), at.GetVerb(), at.GetResource(), at.GetSubresource()))
				return
			}
			if decision == authorizer.DecisionAllow {
				h.ServeHTTP(w, r)
				return
			}
			log.V(4).Info("Request denied", "user", resp.User.GetName(), "subresource", at.GetSubresource(), "reason", reason)
		}
		writeText(w, http.StatusForbidden, ForbiddenMessage(resp.User.GetName(), Verb(r.Method), subs))
	})
}

// ForbiddenMessage is kubelet's 403 body.
func ForbiddenMessage(userName, verb string, subresources []string) string {
	return fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=[%s])", userName, verb, strings.Join(subresources, " "))
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprint(w, msg)
}
