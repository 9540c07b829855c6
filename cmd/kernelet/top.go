package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kernelet/kernelet/internal/top"
)

// topFlags are `kernelet top`'s flags.
type topFlags struct {
	addr                       agentAddr
	token, cert, key, ca, sort string
	insecure                   bool
}

// topCommand: `kernelet top` shows the node's memory pressure and its pods
// live in the terminal, from the agent's dashboard event stream: by
// default through the local socket (<root-dir>/kernelet.sock, root only),
// or --server: the read-only port (http://HOST:10255) or the kubelet API
// (https://HOST:10250, with --token or --cert/--key; the path is the
// nodes/proxy subresource).
func topCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f topFlags
	fs.StringVar(&f.sort, "sort", "m", "initial order: m (memory), p (PSI), o (OOM kills), n (name)")
	f.addr.register(fs, "the agent's URL: unix:///path/to/kernelet.sock, http://host:readOnlyPort or https://host:port")
	fs.StringVar(&f.token, "token", "", "bearer token for https (default: $KERNELET_TOKEN)")
	fs.StringVar(&f.cert, "cert", "", "client certificate file for https")
	fs.StringVar(&f.key, "key", "", "client key file for https")
	fs.StringVar(&f.ca, "ca", "", "CA file to verify the agent's serving certificate")
	fs.BoolVar(&f.insecure, "insecure-skip-tls-verify", false, "do not verify the agent's serving certificate (kernelet's own self-signed one)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	key, ok := top.SortKeys[f.sort]
	if !ok {
		fmt.Fprintf(stderr, "kernelet top: --sort %q: want m, p, o or n\n", f.sort)
		return 2
	}
	if f.token == "" {
		f.token = os.Getenv("KERNELET_TOKEN")
	}
	base, client, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "kernelet top: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	source := f.addr.server
	if source == "" {
		source = f.addr.base()
	}
	if err := top.Run(ctx, top.Options{Base: base, Source: source, Client: client, In: os.Stdin, Out: stdout, Sort: key}); err != nil {
		fmt.Fprintf(stderr, "kernelet top: %v\n", err)
		return 1
	}
	return 0
}

// client is the base URL and HTTP client for the agent f names.
func (f *topFlags) client() (string, *http.Client, error) {
	base := f.addr.base()
	if sock, ok := strings.CutPrefix(base, "unix://"); ok {
		return "http://kernelet", unixClient(sock), nil
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return "", nil, fmt.Errorf("--server %q: want unix://, http:// or https://", f.addr.server)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: f.insecure} //nolint:gosec // asked for by flag
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return "", nil, fmt.Errorf("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return "", nil, fmt.Errorf("--ca %s: no PEM certificate in it", f.ca)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	if f.cert != "" || f.key != "" {
		c, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return "", nil, fmt.Errorf("--cert/--key: %w", err)
		}
		tr.TLSClientConfig.Certificates = []tls.Certificate{c}
	}
	var rt http.RoundTripper = tr
	if f.token != "" {
		rt = bearer{token: f.token, next: tr}
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
