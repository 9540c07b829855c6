package streaming

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	pf "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// Limits of a tunnel's set-up.
const (
	// upgradeTimeout bounds the runtime's answer to the SPDY upgrade.
	upgradeTimeout = 30 * time.Second
	// maxRelayedBody bounds the body of a refusal relayed to the client.
	maxRelayedBody = 1 << 20
)

// Tunnel serves port-forward requests of clients that tunnel SPDY
// through a WebSocket (kubectl port-forward's WebSocket mode: binary
// messages carry the SPDY bytes, the subprotocols offered are the SPDY
// ones prefixed with "SPDY/3.1+"). It asks the runtime's port-forward URL
// for a SPDY upgrade with those protocols; once the runtime has switched,
// it accepts the WebSocket with the protocol the runtime chose and relays
// the bytes both ways, so that every port-forward stream the client opens
// reaches the runtime. A runtime that refuses has its answer relayed to
// the client.
type Tunnel struct {
	// URL is the runtime's port-forward URL.
	URL *url.URL
}

// ServeHTTP serves one tunnel until either side closes it. A request
// offering no tunneled protocol is a 400; a runtime that cannot be
// reached a 500, as the upgrade proxy answers.
func (t Tunnel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := klog.FromContext(r.Context())
	protocols := TunneledProtocols(r)
	if len(protocols) == 0 {
		writeError(w, http.StatusBadRequest, "unable to upgrade: no tunneling spdy protocols provided")
		return
	}
	backend, resp, err := dialSPDY(r.Context(), t.URL, protocols)
	if err != nil {
		responder{}.Error(w, r, err)
		return
	}
	defer func() { _ = backend.Close() }()
	if !switchedToSPDY(resp) {
		log.V(2).Info("The runtime refused the port-forward upgrade", "status", resp.Status)
		relay(w, resp)
		return
	}
	var accept []string
	if p := strings.TrimSpace(resp.Header.Get(httpstream.HeaderProtocolVersion)); p != "" {
		accept = []string{pf.WebsocketsSPDYTunnelingPrefix + p}
	}
	up := websocket.Upgrader{Subprotocols: accept, CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		log.V(2).Info("WebSocket port-forward upgrade failed", "err", err, "path", r.URL.Path)
		return // the upgrader has answered
	}
	splice(portforward.NewTunnelingConnectionWithLogger(klog.LoggerWithName(log, "tunnel"), ws), backend)
}

// TunneledProtocols are the SPDY protocols a tunneling WebSocket request
// offers: its subprotocols "SPDY/3.1+<name>.k8s.io", without the prefix.
func TunneledProtocols(r *http.Request) []string {
	var out []string
	for _, p := range websocket.Subprotocols(r) {
		if name, ok := strings.CutPrefix(p, pf.WebsocketsSPDYTunnelingPrefix); ok && strings.HasSuffix(name, pf.KubernetesSuffix) {
			out = append(out, name)
		}
	}
	return out
}

// backendConn is the connection to the runtime; reads go through the
// buffer the upgrade answer was read with.
type backendConn struct {
	net.Conn
	r *bufio.Reader
}

// Read reads from the buffered connection.
func (c backendConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialSPDY connects to u and asks for a SPDY upgrade offering protocols;
// resp is the runtime's answer (its body, for a refusal, is read from
// the returned connection).
func dialSPDY(ctx context.Context, u *url.URL, protocols []string) (backendConn, *http.Response, error) {
	conn, err := proxy.DialURL(ctx, u, nil)
	if err != nil {
		return backendConn{}, nil, fmt.Errorf("dial the runtime's streaming server %s: %w", u.Host, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		_ = conn.Close()
		return backendConn{}, nil, fmt.Errorf("upgrade request: %w", err)
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	_ = conn.SetDeadline(time.Now().Add(upgradeTimeout))
	br := bufio.NewReader(conn)
	resp, err := func() (*http.Response, error) {
		if err := req.Write(conn); err != nil {
			return nil, err
		}
		return http.ReadResponse(br, req)
	}()
	if err != nil {
		_ = conn.Close()
		return backendConn{}, nil, fmt.Errorf("SPDY upgrade at the runtime's streaming server: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	return backendConn{conn, br}, resp, nil
}

// switchedToSPDY tells whether resp accepts a SPDY/3.1 upgrade.
func switchedToSPDY(resp *http.Response) bool {
	has := func(header, want string) bool {
		return strings.Contains(strings.ToLower(resp.Header.Get(header)), strings.ToLower(want))
	}
	return resp.StatusCode == http.StatusSwitchingProtocols &&
		has(httpstream.HeaderConnection, httpstream.HeaderUpgrade) && has(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
}

// relay answers the client with the runtime's refusal: its status, its
// headers but the hop-by-hop ones and its body (up to maxRelayedBody).
func relay(w http.ResponseWriter, resp *http.Response) {
	defer func() { _ = resp.Body.Close() }()
	for k, vs := range resp.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Connection", "Upgrade", "Keep-Alive", "Transfer-Encoding", "Content-Length":
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxRelayedBody))
}

// splice copies bytes between the client and the runtime, both ways,
// until either direction ends; then it closes both connections.
func splice(client, backend io.ReadWriteCloser) {
	done := make(chan struct{}, 2)
	pipe := func(dst io.Writer, src io.Reader) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	_ = client.Close()
	_ = backend.Close()
	<-done
}
