package certificates

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// errNoClientCert is returned for requests made before any client
// certificate is known.
var errNoClientCert = errors.New("no client certificate yet")

// rotatingTransport is the API clients' transport under client
// certificate rotation. Each certificate gets its own HTTP transport:
// Swap makes new requests use the new one and closes the previous one's
// idle connections; requests in flight there (watches) go on until they
// end, and that transport's connections then close as idle (after
// IdleConnTimeout). No connection is cut, so no watch is; and no new
// request is sent with an old certificate.
type rotatingTransport struct {
	tlsBase *tls.Config

	mu   sync.RWMutex
	cur  *http.Transport
	cert *tls.Certificate
}

func newRotatingTransport(tlsBase *tls.Config) *rotatingTransport {
	if tlsBase == nil {
		tlsBase = &tls.Config{}
	}
	return &rotatingTransport{tlsBase: tlsBase}
}

// Swap starts using cert for new requests; a nil cert or the certificate
// in use changes nothing. It reports whether it swapped.
func (t *rotatingTransport) Swap(cert *tls.Certificate) bool {
	if cert == nil {
		return false
	}
	t.mu.Lock()
	if t.cert == cert {
		t.mu.Unlock()
		return false
	}
	tc := t.tlsBase.Clone()
	tc.Certificates = []tls.Certificate{*cert}
	next := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tc,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	})
	prev := t.cur
	t.cur, t.cert = next, cert
	t.mu.Unlock()
	if prev != nil {
		prev.CloseIdleConnections()
	}
	return true
}

// current is the transport of the current certificate (nil before one).
func (t *rotatingTransport) current() *http.Transport {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.cur
}

// RoundTrip sends req with the current certificate.
func (t *rotatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	cur := t.current()
	if cur == nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errNoClientCert
	}
	return cur.RoundTrip(req)
}

// CloseIdleConnections closes the current transport's idle connections
// (utilnet.CloseIdleConnectionsFor reaches it through client-go's
// wrappers: the heartbeat's recovery).
func (t *rotatingTransport) CloseIdleConnections() {
	if cur := t.current(); cur != nil {
		cur.CloseIdleConnections()
	}
}
