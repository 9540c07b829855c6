package certificates

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/clientset"
)

// Rotation window: a certificate is renewed at a random point between 70
// and 90 % of its lifetime (kubelet's, through client-go's manager).
const (
	rotationStart  = 0.7
	rotationJitter = 0.2
)

// Retry bounds of a renewal that failed (doubling from the first).
const (
	retryFirst = 2 * time.Second
	retryMax   = 5 * time.Minute
)

// templateRecheck is how often a dynamic template (the serving
// certificate's addresses) is compared with the certificate in use.
const templateRecheck = time.Minute

// renewalWait bounds the wait for one renewal's CSR to be issued before
// a new request (client-go's manager waits 15 minutes).
const renewalWait = 15 * time.Minute

// ExitAfterExpiry is how long the agent runs on with an expired client
// certificate the API server refuses to renew (kubelet's 5 minutes).
const ExitAfterExpiry = 5 * time.Minute

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: at 70 % of its lifetime plus u (in [0,1)) times 20 %.
func RotationDeadline(notBefore, notAfter time.Time, u float64) time.Time {
	total := notAfter.Sub(notBefore)
	return notBefore.Add(time.Duration(float64(total) * (rotationStart + rotationJitter*u)))
}

// nextRetry doubles the wait after a failed renewal, up to retryMax.
func nextRetry(prev time.Duration) time.Duration {
	if prev <= 0 {
		return retryFirst
	}
	return min(2*prev, retryMax)
}

// Rotator keeps one certificate of the node current: loaded from its
// store, renewed through a new key and CSR at RotationDeadline (or at
// once when the certificate no longer matches the template), stored, and
// handed to OnUpdate.
type Rotator struct {
	name   string
	store  fileStore
	signer string
	usages func(key any) []certificatesv1.KeyUsage
	// template is the request's subject and names (nil: not yet known,
	// wait); dynamic ones are compared with the certificate every
	// templateRecheck.
	template func() *x509.CertificateRequest
	dynamic  bool
	client   func() (clientset.CSRClient, error)
	onUpdate func(*tls.Certificate)
	now      func() time.Time
	uniform  func() float64
	// exitAfter: see Run (0: never give up).
	exitAfter time.Duration
	// renewFailures counts failed renewals and rotationAge observes how
	// long a replaced certificate lived (ClientMetrics, ServingMetrics;
	// nil: not measured).
	renewFailures prometheus.Counter
	rotationAge   prometheus.Observer

	mu  sync.RWMutex
	cur *tls.Certificate
}

// Current is the certificate in use (nil before the first one).
func (r *Rotator) Current() *tls.Certificate {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur
}

func (r *Rotator) set(c *tls.Certificate) {
	r.mu.Lock()
	r.cur = c
	r.mu.Unlock()
	if r.onUpdate != nil {
		r.onUpdate(c)
	}
}

// load reads the store's certificate, if any, into Current.
func (r *Rotator) load() error {
	c, err := r.store.Current()
	if err == errNoCert {
		return nil
	}
	if err != nil {
		return err
	}
	r.set(c)
	return nil
}

// Run renews the certificate until ctx is done.
//
// With exitAfter set (the client certificate), Run returns an error once
// the certificate in use has been expired for exitAfter while the API
// server answers the renewals (it refuses them): the agent then exits,
// as kubelet does, for its supervisor to start it again and bootstrap
// anew.
func (r *Rotator) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName(r.name)
	var (
		deadlineOf *tls.Certificate
		deadline   time.Time
		retry      time.Duration
	)
	for {
		cur := r.Current()
		tmpl := r.template()
		if cur != nil && cur != deadlineOf {
			deadlineOf, retry = cur, 0
			deadline = RotationDeadline(cur.Leaf.NotBefore, cur.Leaf.NotAfter, r.uniform())
			log.Info("Certificate rotation deadline", "expiration", cur.Leaf.NotAfter, "deadline", deadline)
		}
		wait := nextWake(r.now(), cur, deadline, tmpl, r.dynamic)
		if wait > 0 {
			if !sleep(ctx, wait) {
				return nil
			}
			continue
		}
		if err := r.renew(ctx, tmpl); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if cur != nil && GiveUp(r.now(), cur.Leaf.NotAfter, r.exitAfter, err) {
				return fmt.Errorf("%s expired at %s and the API server refuses its renewal: %w", r.name, cur.Leaf.NotAfter.UTC().Format(time.RFC3339), err)
			}
			retry = nextRetry(retry)
			log.Error(err, "Certificate renewal failed", "retryIn", retry)
			if !sleep(ctx, retry) {
				return nil
			}
		}
	}
}

// GiveUp tells whether a renewal that failed with err ends the agent: the
// certificate expired more than exitAfter (> 0) ago and the API server
// answered (err is its status, not a network error, as kubelet checks
// that the server is healthy before it exits).
func GiveUp(now, notAfter time.Time, exitAfter time.Duration, err error) bool {
	var status apierrors.APIStatus
	return exitAfter > 0 && now.After(notAfter.Add(exitAfter)) && errors.As(err, &status)
}

// nextWake is how long the loop sleeps before looking again: 0 renews
// now (no certificate, the deadline passed, or the certificate no longer
// matches the template); without a template it waits for one.
func nextWake(now time.Time, cur *tls.Certificate, deadline time.Time, tmpl *x509.CertificateRequest, dynamic bool) time.Duration {
	if tmpl == nil {
		return time.Second
	}
	if cur == nil || !Satisfies(cur.Leaf, tmpl) || !now.Before(deadline) {
		return 0
	}
	wait := deadline.Sub(now)
	if dynamic {
		wait = min(wait, templateRecheck)
	}
	return wait
}

// renew requests a certificate for a new key, stores it and makes it
// current. A failure is counted unless ctx ended; the certificate it
// replaces has its age (from its NotBefore) observed.
func (r *Rotator) renew(ctx context.Context, tmpl *x509.CertificateRequest) (err error) {
	parent := ctx // a CSR that timed out (renewalWait) counts
	defer func() {
		if err != nil && parent.Err() == nil && r.renewFailures != nil {
			r.renewFailures.Inc()
		}
	}()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	req, err := newRequest(tmpl, key, r.signer, r.usages(key))
	if err != nil {
		return err
	}
	client, err := r.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, renewalWait)
	defer cancel()
	certPEM, err := requestCertificate(ctx, client, req)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	c, err := r.store.Update(certPEM, keyPEM)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).WithName(r.name).Info("Certificate rotated", "expiration", c.Leaf.NotAfter, "path", r.store.CurrentPath())
	if old := r.Current(); old != nil && r.rotationAge != nil {
		r.rotationAge.Observe(r.now().Sub(old.Leaf.NotBefore).Seconds())
	}
	r.set(c)
	return nil
}

// Satisfies tells whether cert has tmpl's subject and exactly its names.
func Satisfies(cert *x509.Certificate, tmpl *x509.CertificateRequest) bool {
	if cert == nil || tmpl == nil {
		return false
	}
	if cert.Subject.CommonName != tmpl.Subject.CommonName || !slices.Equal(sorted(cert.Subject.Organization), sorted(tmpl.Subject.Organization)) {
		return false
	}
	if !slices.Equal(sorted(cert.DNSNames), sorted(tmpl.DNSNames)) {
		return false
	}
	return slices.Equal(sorted(ipStrings(cert.IPAddresses)), sorted(ipStrings(tmpl.IPAddresses)))
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// sleep waits d or until ctx is done (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// defaultUniform is the jitter's random source.
func defaultUniform() float64 { return mathrand.Float64() }

// signerOf is the crypto.Signer of a parsed private key.
func signerOf(key any) (crypto.Signer, error) {
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key %T is not a crypto.Signer", key)
	}
	return s, nil
}
