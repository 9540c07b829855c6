package streaming

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	pf "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
)

func TestTunneledProtocols(t *testing.T) {
	for header, want := range map[string][]string{
		"SPDY/3.1+portforward.k8s.io":                             {"portforward.k8s.io"},
		"SPDY/3.1+portforward.k8s.io, SPDY/3.1+v2.example.k8s.io": {"portforward.k8s.io", "v2.example.k8s.io"},
		"v5.channel.k8s.io, SPDY/3.1+portforward.k8s.io":          {"portforward.k8s.io"},
		"SPDY/3.1+portforward.example.com":                        nil,
		"portforward.k8s.io":                                      nil,
		"":                                                        nil,
	} {
		r := httptest.NewRequest("GET", "/portForward/ns/pod", nil)
		if header != "" {
			r.Header.Set("Sec-WebSocket-Protocol", header)
		}
		if got := TunneledProtocols(r); !slices.Equal(got, want) {
			t.Errorf("TunneledProtocols(%q) = %q, want %q", header, got, want)
		}
	}
}

// echoPorts is the fake runtime's port-forward: a data stream answers
// "<port>:<what it was sent>" once the client has closed its side; an
// error stream stays silent.
func echoPorts(_ *http.Request, s httpstream.Stream) {
	if s.Headers().Get(v1.StreamType) != v1.StreamTypeData {
		return
	}
	in, _ := io.ReadAll(s)
	_, _ = fmt.Fprintf(s, "%s:%s", s.Headers().Get(v1.PortHeader), in)
	_ = s.Close()
}

// tunnelServer serves Tunnel for the runtime at runtimeURL.
func tunnelServer(t *testing.T, runtimeURL *url.URL) *httptest.Server {
	srv := httptest.NewServer(Tunnel{URL: runtimeURL})
	t.Cleanup(srv.Close)
	return srv
}

// client-go's SPDY-over-WebSocket dialer (kubectl port-forward's
// WebSocket mode) reaches the runtime through Tunnel: the protocol is
// negotiated with the runtime, and several streams to several ports
// carry their data both ways at once.
func TestTunnelPortForward(t *testing.T) {
	rt, closed := spdyRuntime(t, pf.PortForwardV1Name, echoPorts)
	srv := tunnelServer(t, rt)
	u, _ := url.Parse(srv.URL + "/portForward/ns/pod")
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, &rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	conn, protocol, err := dialer.Dial(pf.PortForwardV1Name)
	if err != nil {
		t.Fatal(err)
	}
	if protocol != pf.PortForwardV1Name {
		t.Errorf("protocol = %q, want %q", protocol, pf.PortForwardV1Name)
	}
	var wg sync.WaitGroup
	for i, port := range []string{"80", "8080", "80", "9090"} {
		wg.Go(func() {
			h := http.Header{}
			h.Set(v1.StreamType, v1.StreamTypeError)
			h.Set(v1.PortHeader, port)
			h.Set(v1.PortForwardRequestIDHeader, fmt.Sprint(i))
			errStream, err := conn.CreateStream(h)
			if err != nil {
				t.Error(err)
				return
			}
			_ = errStream.Close()
			h.Set(v1.StreamType, v1.StreamTypeData)
			data, err := conn.CreateStream(h)
			if err != nil {
				t.Error(err)
				return
			}
			msg := strings.Repeat(fmt.Sprintf("request %d;", i), 5000) // several WebSocket messages
			if _, err := io.WriteString(data, msg); err != nil {
				t.Error(err)
			}
			_ = data.Close()
			got, err := io.ReadAll(data)
			if want := port + ":" + msg; err != nil || string(got) != want {
				t.Errorf("stream %d: got %d bytes (%.20q...), %v; want %d bytes", i, len(got), got, err, len(want))
			}
		})
	}
	wg.Wait()
	_ = conn.Close()
	<-closed // the tunnel's end closes the runtime's connection
}

// Tunnel answers what it cannot tunnel: a request offering no tunneled
// protocol is a 400, a runtime that refuses the upgrade has its answer
// relayed, one that cannot be reached is a 500.
func TestTunnelErrors(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Runtime", "refused")
		http.Error(w, "port forward session not found", http.StatusNotFound)
	}))
	defer refusing.Close()
	refusingURL, _ := url.Parse(refusing.URL + "/portforward/token")
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL, _ := url.Parse(gone.URL)
	gone.Close()
	for name, tc := range map[string]struct {
		rt       *url.URL
		protocol string
		code     int
		bodyHas  string
	}{
		"no tunneled protocol": {refusingURL, "portforward.k8s.io", 400, "no tunneling spdy protocols"},
		"runtime refuses":      {refusingURL, pf.WebsocketsSPDYTunnelingPortForwardV1, 404, "port forward session not found"},
		"runtime unreachable":  {goneURL, pf.WebsocketsSPDYTunnelingPortForwardV1, 500, "dial the runtime's streaming server"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/portForward/ns/pod", nil)
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
			r.Header.Set("Sec-WebSocket-Version", "13")
			r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			r.Header.Set("Sec-WebSocket-Protocol", tc.protocol)
			Tunnel{URL: tc.rt}.ServeHTTP(rec, r)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.bodyHas) {
				t.Errorf("= %d %q, want %d and %q", rec.Code, rec.Body.String(), tc.code, tc.bodyHas)
			}
			if tc.code == 404 && rec.Header().Get("X-Runtime") != "refused" {
				t.Errorf("the runtime's headers are not relayed: %v", rec.Header())
			}
		})
	}
}
