package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kernelet/kernelet/agent"
)

// agentAddr names a running agent and how to authenticate to it: --server,
// else the local socket below --root-dir; for https, a bearer token or
// kubectl's client certificate flags. `kernelet status` and `kernelet
// top` share it.
type agentAddr struct {
	server, rootDir      string
	token, cert, key, ca string
	insecure             bool
}

// register adds the flags to fs; usage describes --server.
func (a *agentAddr) register(fs *pflag.FlagSet, usage string) {
	fs.StringVar(&a.server, "server", "", usage+" (default: unix://<root-dir>/"+agent.LocalSocket+")")
	fs.StringVar(&a.rootDir, "root-dir", DefaultRootDir, "the agent's --root-dir, where its local socket is")
	fs.StringVar(&a.token, "token", "", "bearer token for https (default: $KERNELET_TOKEN)")
	fs.StringVar(&a.cert, "client-certificate", "", "client certificate file for https")
	fs.StringVar(&a.key, "client-key", "", "client key file for https")
	fs.StringVar(&a.ca, "certificate-authority", "", "CA file to verify the agent's serving certificate")
	fs.BoolVar(&a.insecure, "insecure-skip-tls-verify", false, "do not verify the agent's serving certificate (kernelet's own self-signed one)")
	// The names before kubectl's.
	for old, cur := range map[string]string{"cert": "client-certificate", "key": "client-key", "ca": "certificate-authority"} {
		fl := *fs.Lookup(cur)
		fl.Name, fl.Deprecated = old, "use --"+cur
		fs.AddFlag(&fl)
	}
}

// base is the agent's URL without a trailing slash: --server, or
// unix://<root-dir>/kernelet.sock.
func (a *agentAddr) base() string {
	server := a.server
	if server == "" {
		server = "unix://" + filepath.Join(a.rootDir, agent.LocalSocket)
	}
	return strings.TrimRight(server, "/")
}

// url is the URL to request for u (below base): over the Unix socket,
// any host does.
func (a *agentAddr) url(base, u string) string {
	if strings.HasPrefix(base, "unix://") {
		return "http://kernelet" + strings.TrimPrefix(u, base)
	}
	return u
}

// client is the base URL and HTTP client for the agent a names.
func (a *agentAddr) client() (string, *http.Client, error) {
	base := a.base()
	if sock, ok := strings.CutPrefix(base, "unix://"); ok {
		return base, unixClient(sock), nil
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return "", nil, fmt.Errorf("--server %q: want unix://, http:// or https://", a.server)
	}
	if a.token == "" {
		a.token = os.Getenv("KERNELET_TOKEN")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: a.insecure} //nolint:gosec // asked for by flag
	if a.ca != "" {
		pem, err := os.ReadFile(a.ca)
		if err != nil {
			return "", nil, fmt.Errorf("--certificate-authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return "", nil, fmt.Errorf("--certificate-authority %s: no PEM certificate in it", a.ca)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	if a.cert != "" || a.key != "" {
		c, err := tls.LoadX509KeyPair(a.cert, a.key)
		if err != nil {
			return "", nil, fmt.Errorf("--client-certificate/--client-key: %w", err)
		}
		tr.TLSClientConfig.Certificates = []tls.Certificate{c}
	}
	var rt http.RoundTripper = tr
	if a.token != "" {
		rt = bearer{token: a.token, next: tr}
	}
	return base, &http.Client{Transport: rt}, nil
}

// bearer adds an Authorization header.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// unixClient is an HTTP client whose every request goes to the Unix
// socket sock, whatever the URL's host.
func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}
