package streaming

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// ErrNoStreams: an exec or attach request asked for no stream.
var ErrNoStreams = errors.New("you must specify at least 1 of stdin, stdout, stderr")

// ParseTarget splits a path below the endpoint's prefix:
// {namespace}/{pod}/{container} or {namespace}/{pod}/{uid}/{container};
// without container (port-forward) {namespace}/{pod} or
// {namespace}/{pod}/{uid}.
func ParseTarget(rest string, withContainer bool) (Target, bool) {
	p := strings.Split(strings.Trim(rest, "/"), "/")
	for _, s := range p {
		if s == "" {
			return Target{}, false
		}
	}
	t := Target{}
	switch {
	case withContainer && len(p) == 3:
		t = Target{Namespace: p[0], Pod: p[1], Container: p[2]}
	case withContainer && len(p) == 4:
		t = Target{Namespace: p[0], Pod: p[1], UID: p[2], Container: p[3]}
	case !withContainer && len(p) == 2:
		t = Target{Namespace: p[0], Pod: p[1]}
	case !withContainer && len(p) == 3:
		t = Target{Namespace: p[0], Pod: p[1], UID: p[2]}
	default:
		return Target{}, false
	}
	return t, true
}

// ParseOptions reads the streams of an exec or attach request as kubelet
// does: input, output, error and tty set when "1"; stderr is dropped with
// a tty; at least one stream is needed.
func ParseOptions(q url.Values) (Options, error) {
	o := Options{
		Stdin:  q.Get("input") == "1",
		Stdout: q.Get("output") == "1",
		Stderr: q.Get("error") == "1",
		TTY:    q.Get("tty") == "1",
	}
	if o.TTY && o.Stderr {
		o.Stderr = false // a tty merges stderr into stdout
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, ErrNoStreams
	}
	return o, nil
}

// Ports are the ports of a WebSocket port-forward request (query "port",
// repeated or comma-separated); SPDY clients (also SPDY tunneled in a
// WebSocket) name them per stream, so their requests carry none.
func Ports(r *http.Request) ([]int32, error) {
	if !isWebSocket(r) || wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		return nil, nil
	}
	var ports []int32
	for _, v := range r.URL.Query()["port"] {
		for s := range strings.SplitSeq(v, ",") {
			p, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
			if err != nil || p == 0 {
				return nil, fmt.Errorf("unable to parse %q as a port: %w", s, errOrZero(err))
			}
			ports = append(ports, int32(p))
		}
	}
	if len(ports) == 0 {
		return nil, errors.New(`query parameter "port" is required`)
	}
	return ports, nil
}

func errOrZero(err error) error {
	if err != nil {
		return err
	}
	return errors.New("port 0 is not valid")
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// RunCommand is the command of a /run request: its cmd parameter split
// at spaces, as kubelet does.
func RunCommand(q url.Values) []string {
	return strings.Split(q.Get("cmd"), " ")
}
