package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	criclient "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/httpget"
	"github.com/kernelet/kernelet/internal/kubeversion"
)

// maxBody is how much of an HTTP probe's response body is read (kubelet's
// 10 KiB).
const maxBody = 10 << 10

// maxRedirects is how many same-host redirects an HTTP probe follows.
const maxRedirects = 10

// target is where a probe goes: the pod's IP (the handler's host when it
// names one) and the container, for named ports.
type target struct {
	podIP       string
	containerID string
	container   *v1.Container
}

// handlers run probe actions; one per Manager.
type handlers struct {
	exec      ExecFunc
	transport *http.Transport
	userAgent string
}

func newHandlers(exec ExecFunc, userAgent string) *handlers {
	if userAgent == "" {
		userAgent = httpget.UserAgent("kube-probe", kubeversion.Get())
	}
	tr := &http.Transport{
		// As kubelet: no certificate check, no proxy, a new connection
		// per probe.
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as kubelet's
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	return &handlers{exec: exec, transport: tr, userAgent: userAgent}
}

// run runs probe p once against t, within its timeout. It returns the
// outcome, the output (for events) and, for OutcomeUnknown, the error.
func (h *handlers) run(ctx context.Context, p *v1.Probe, t target) (Outcome, string, error) {
	timeout := Timeout(p)
	switch {
	case p.Exec != nil:
		return h.runExec(ctx, ExpandCommand(p.Exec.Command, t.container), t.containerID, timeout)
	case p.HTTPGet != nil:
		return h.runHTTP(ctx, p.HTTPGet, t, timeout)
	case p.TCPSocket != nil:
		port, err := httpget.ResolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return OutcomeUnknown, "", err
		}
		return runTCP(ctx, hostOr(p.TCPSocket.Host, t.podIP), port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return h.runGRPC(ctx, net.JoinHostPort(t.podIP, strconv.Itoa(int(p.GRPC.Port))), service, timeout)
	}
	return OutcomeUnknown, "", errors.New("probe has no handler")
}

// ExpandCommand expands $(NAME) in an exec probe's command with the
// container's env variables that have a literal value (as kubelet: no
// valueFrom, no service variables).
func ExpandCommand(cmd []string, c *v1.Container) []string {
	if c == nil || len(c.Env) == 0 {
		return cmd
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = podconfig.Expand(s, lookup)
	}
	return out
}

func hostOr(host, podIP string) string {
	if host != "" {
		return host
	}
	return podIP
}

// runExec runs an exec probe: exit 0 succeeds, another exit status fails
// with the command's output, a timed-out command fails with the timeout
// error (kubelet with ExecProbeTimeout), anything else is an error.
func (h *handlers) runExec(ctx context.Context, cmd []string, id string, timeout time.Duration) (Outcome, string, error) {
	if h.exec == nil {
		return OutcomeUnknown, "", errors.New("exec probes need a runtime")
	}
	stdout, stderr, err := h.exec(ctx, id, cmd, timeout)
	out := string(stdout) + string(stderr)
	if err == nil {
		return OutcomeSuccess, out, nil
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitStatus() == 0 {
			return OutcomeSuccess, out, nil
		}
		return OutcomeFailure, out, nil
	}
	if errors.Is(err, criclient.ErrCommandTimedOut) {
		return OutcomeFailure, err.Error(), nil
	}
	return OutcomeUnknown, "", err
}

// runHTTP runs an httpGet probe: 2xx succeeds; a redirect to the same
// host is followed, one to another host is a success with a warning; any
// other status or a transport error fails.
func (h *handlers) runHTTP(ctx context.Context, g *v1.HTTPGetAction, t target, timeout time.Duration) (Outcome, string, error) {
	u, err := httpget.URL(g, t.container, t.podIP)
	if err != nil {
		return OutcomeUnknown, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return OutcomeUnknown, "", err
	}
	req.Header.Set("User-Agent", h.userAgent)
	req.Header.Set("Accept", "*/*")
	for _, hd := range g.HTTPHeaders {
		if strings.EqualFold(hd.Name, "host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Del(hd.Name) // the probe's headers replace the defaults
	}
	for _, hd := range g.HTTPHeaders {
		if !strings.EqualFold(hd.Name, "host") {
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	client := &http.Client{Transport: h.transport, CheckRedirect: sameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	return HTTPOutcome(resp.StatusCode, string(body))
}

// sameHostRedirects follows redirects to the original host only (at most
// maxRedirects); another host ends the chain with the redirect response.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// HTTPOutcome classifies an HTTP probe's final response as kubelet does.
func HTTPOutcome(code int, body string) (Outcome, string, error) {
	switch {
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return OutcomeSuccess, body, nil
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		return OutcomeWarning, "Probe terminated redirects, Response body: " + body, nil
	}
	return OutcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code), nil
}

// runTCP runs a tcpSocket probe: a connection within the timeout
// succeeds.
func runTCP(ctx context.Context, host string, port int, timeout time.Duration) (Outcome, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return OutcomeSuccess, "", nil
}
