package streaming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rc "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Timings of a translated session.
const (
	// DefaultIdleTimeout ends a WebSocket session nothing crossed for
	// that long when no IdleTimeout is given (kubelet's default
	// streamingConnectionIdleTimeout).
	DefaultIdleTimeout = 4 * time.Hour
	// statusWriteTimeout bounds writing the final status.
	statusWriteTimeout = 10 * time.Second
	// runtimePingPeriod keeps the SPDY connection to the runtime alive.
	runtimePingPeriod = 5 * time.Second
)

// Translator serves an exec or attach request of a WebSocket client
// speaking the v5.channel.k8s.io remote-command protocol by running the
// session over SPDY against the runtime's streaming URL, which may not
// speak v5. The client's channels map to the session's streams: stdin
// (closed by the client's CLOSE signal), stdout, stderr and, with a tty,
// terminal sizes (JSON objects); when the session ends, its outcome is
// written on the error channel as a metav1.Status (ExitStatus).
type Translator struct {
	// URL is the runtime's streaming URL for this session.
	URL *url.URL
	// Options are the streams the client asked for.
	Options Options
	// IdleTimeout ends the session after that long without traffic
	// (streamingConnectionIdleTimeout); 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// ServeHTTP upgrades the request to a WebSocket (an upgrade that fails
// is answered by the WebSocket library), runs the session and reports
// its outcome. A client that goes away ends the session.
func (t Translator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := klog.FromContext(r.Context())
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		rc.StreamProtocolV5Name: {Binary: true, Channels: channelTypes(t.Options)},
	})
	idle := t.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	conn.SetIdleTimeout(idle)
	_, channels, err := conn.Open(w, r)
	if err != nil {
		log.V(2).Info("WebSocket remote-command upgrade failed", "err", err, "path", r.URL.Path)
		return
	}
	defer func() { _ = conn.Close() }()
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, channels[goneChannel])
		close(gone)
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	// An empty message on the first channel the client reads tells it
	// the session is set up.
	if _, err := channels[firstOutput(t.Options)].Write(nil); err != nil {
		log.V(2).Info("WebSocket remote-command session closed at once", "err", err)
		return
	}
	st := ExitStatus(t.run(ctx, channels))
	msg, err := json.Marshal(st)
	if err == nil {
		conn.SetWriteDeadline(statusWriteTimeout)
		_, err = channels[rc.StreamErr].Write(msg)
	}
	if err != nil {
		log.V(2).Info("Unable to report the remote-command status", "err", err, "status", st.Status)
	}
	// The client reads the error channel to its end: closing the
	// connection (deferred) ends it.
}

// run streams the session towards the runtime until it ends or ctx is
// done.
func (t Translator) run(ctx context.Context, channels []io.ReadWriteCloser) error {
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{PingPeriod: runtimePingPeriod})
	if err != nil {
		return fmt.Errorf("SPDY round tripper: %w", err)
	}
	ex, err := remotecommand.NewSPDYExecutorRejectRedirects(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, t.URL)
	if err != nil {
		return fmt.Errorf("SPDY executor: %w", err)
	}
	o := remotecommand.StreamOptions{Tty: t.Options.TTY}
	if t.Options.Stdin {
		o.Stdin = channels[rc.StreamStdIn]
	}
	if t.Options.Stdout {
		o.Stdout = channels[rc.StreamStdOut]
	}
	if t.Options.Stderr {
		o.Stderr = channels[rc.StreamStdErr]
	}
	if t.Options.TTY {
		o.TerminalSizeQueue = sizeQueue{json.NewDecoder(channels[rc.StreamResize])}
	}
	return ex.StreamWithContext(ctx, o)
}

// goneChannel follows the protocol's channels; clients never use it.
// Reading it ends when the WebSocket connection has ended (the channels
// are closed then), which tells that the client has gone.
const goneChannel = rc.StreamResize + 1

// channelTypes are the v5 channels for o: stdin is read, stdout and
// stderr written when asked for; the error channel is always written;
// the resize channel is read with a tty (else it is ignored, as nothing
// would drain it); then goneChannel, read.
func channelTypes(o Options) []wsstream.ChannelType {
	pick := func(on bool, t wsstream.ChannelType) wsstream.ChannelType {
		if on {
			return t
		}
		return wsstream.IgnoreChannel
	}
	ch := make([]wsstream.ChannelType, goneChannel+1)
	ch[rc.StreamStdIn] = pick(o.Stdin, wsstream.ReadChannel)
	ch[rc.StreamStdOut] = pick(o.Stdout, wsstream.WriteChannel)
	ch[rc.StreamStdErr] = pick(o.Stderr, wsstream.WriteChannel)
	ch[rc.StreamErr] = wsstream.WriteChannel
	ch[rc.StreamResize] = pick(o.TTY, wsstream.ReadChannel)
	ch[goneChannel] = wsstream.ReadChannel
	return ch
}

// firstOutput is the lowest channel written to the client.
func firstOutput(o Options) int {
	switch {
	case o.Stdout:
		return rc.StreamStdOut
	case o.Stderr:
		return rc.StreamStdErr
	default:
		return rc.StreamErr
	}
}

// ExitStatus is the status a remote-command session that ended with err
// reports on the error channel: Success for nil; for a command that
// exited non-zero, Failure with reason NonZeroExitCode and the code as
// an ExitCode cause (clients turn it into an exit error); an API status
// error as it is; anything else an internal error.
func ExitStatus(err error) metav1.Status {
	st := metav1.Status{Status: metav1.StatusSuccess}
	var exit exec.ExitError
	var api apierrors.APIStatus
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited():
		code := exit.ExitStatus()
		st = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  rc.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with exit code %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: rc.ExitCodeCauseType, Message: strconv.Itoa(code)}}},
		}
	case errors.As(err, &api):
		st = api.Status()
	default:
		st = apierrors.NewInternalError(err).ErrStatus
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return st
}

// sizeQueue reads terminal sizes off the resize channel, one JSON
// object after another, until the channel ends.
type sizeQueue struct{ dec *json.Decoder }

// Next is the next terminal size, nil once the channel has ended or
// carried something that is not a size.
func (q sizeQueue) Next() *remotecommand.TerminalSize {
	var s remotecommand.TerminalSize
	if err := q.dec.Decode(&s); err != nil {
		return nil
	}
	return &s
}
