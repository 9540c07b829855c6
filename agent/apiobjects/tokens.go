package apiobjects

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/clientset"
)

// MaxTokenAge is how long a token is used at most before it is refreshed,
// whatever its expiry (kubelet's 24 h: the API server may extend the
// tokens of kube-api-access volumes to a year).
const MaxTokenAge = 24 * time.Hour

// NeedsRefresh tells whether a token issued at issued that expires at
// expires should be replaced at now: past 80 % of its life, older than
// MaxTokenAge, or expired.
func NeedsRefresh(now, issued, expires time.Time) bool {
	if !now.Before(expires) {
		return true
	}
	life := expires.Sub(issued)
	return now.After(issued.Add(life*8/10)) || now.After(issued.Add(MaxTokenAge))
}

// tokenKey identifies a token: one per pod, service account, audience and
// expiry.
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podName                             string
	podUID                              types.UID
}

type cachedToken struct {
	token           string
	issued, expires time.Time
}

// TokenManager gets service account tokens bound to pods through the
// TokenRequest API and caches them until NeedsRefresh.
type TokenManager struct {
	client clientset.Interface
	clock  clock.PassiveClock

	mu    sync.Mutex
	cache map[tokenKey]cachedToken
}

// NewTokenManager returns a TokenManager on client; clk nil is the real
// clock.
func NewTokenManager(client clientset.Interface, clk clock.PassiveClock) *TokenManager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &TokenManager{client: client, clock: clk, cache: map[tokenKey]cachedToken{}}
}

// ServiceAccountName is the pod's service account ("default" when unset).
func ServiceAccountName(pod *v1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// Token implements volume.Tokens. When a refresh fails the cached token is
// returned while it has not expired.
func (m *TokenManager) Token(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (string, error) {
	st, err := m.TokenStatus(ctx, pod, audience, expirationSeconds)
	return st.Token, err
}

// TokenStatus is Token with the token's expiry (volumemanager.Tokens);
// expirationSeconds 0 leaves the expiry to the API server (its default,
// one hour).
func (m *TokenManager) TokenStatus(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (authenticationv1.TokenRequestStatus, error) {
	key := tokenKey{namespace: pod.Namespace, serviceAccount: ServiceAccountName(pod), audience: audience,
		expirationSeconds: expirationSeconds, podName: pod.Name, podUID: pod.UID}
	now := m.clock.Now()
	m.mu.Lock()
	c, ok := m.cache[key]
	m.mu.Unlock()
	if ok && !NeedsRefresh(now, c.issued, c.expires) {
		return c.status(), nil
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if expirationSeconds > 0 {
		tr.Spec.ExpirationSeconds = &expirationSeconds
	}
	if audience != "" {
		tr.Spec.Audiences = []string{audience}
	}
	got, err := m.client.ServiceAccounts(key.namespace).CreateToken(ctx, key.serviceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		if ok && now.Before(c.expires) {
			klog.FromContext(ctx).Error(err, "Token refresh failed; using the cached token", "pod", klog.KObj(pod), "serviceAccount", key.serviceAccount)
			return c.status(), nil
		}
		return authenticationv1.TokenRequestStatus{}, fmt.Errorf("token for service account %s/%s: %w", key.namespace, key.serviceAccount, err)
	}
	c = cachedToken{token: got.Status.Token, issued: now, expires: got.Status.ExpirationTimestamp.Time}
	if c.expires.IsZero() || !c.expires.After(now) {
		life := expirationSeconds
		if life == 0 {
			life = defaultExpirationSeconds
		}
		c.expires = now.Add(time.Duration(life) * time.Second)
	}
	m.mu.Lock()
	m.cache[key] = c
	m.mu.Unlock()
	return c.status(), nil
}

// defaultExpirationSeconds is the API server's default token lifetime.
const defaultExpirationSeconds = 3600

func (c cachedToken) status() authenticationv1.TokenRequestStatus {
	return authenticationv1.TokenRequestStatus{Token: c.token, ExpirationTimestamp: metav1.NewTime(c.expires)}
}

// Forget implements volume.Tokens.
func (m *TokenManager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.cache {
		if k.podUID == uid {
			delete(m.cache, k)
		}
	}
}
