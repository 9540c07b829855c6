package streaming

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// spdyRuntime is a runtime streaming server for tests: it accepts a SPDY
// upgrade offering protocol and hands every stream the client opens,
// once its reply is sent, to serve, until the client closes the
// connection, which closes the returned channel. A request naming no
// protocol it knows is refused with 403 (the handshake's answer).
func spdyRuntime(t *testing.T, protocol string, serve func(r *http.Request, s httpstream.Stream)) (*url.URL, <-chan struct{}) {
	t.Helper()
	closed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpstream.Handshake(r, w, []string{protocol}); err != nil {
			return
		}
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
			go func() {
				<-replySent
				serve(r, s)
			}()
			return nil
		})
		if conn == nil {
			return
		}
		defer func() { _ = conn.Close() }()
		select {
		case <-conn.CloseChan():
			close(closed)
		case <-time.After(time.Minute):
			t.Error("the runtime's connection was not closed within a minute")
		}
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u, closed
}

// streamsOf collects the streams of one exec session by type (stdin,
// stdout, stderr, error, resize) and calls run once the client has
// opened all it will for the session's options, read from the request's
// query as kubelet does.
func streamsOf(t *testing.T, run func(o Options, s map[string]httpstream.Stream)) func(r *http.Request, s httpstream.Stream) {
	type arrival struct {
		r *http.Request
		s httpstream.Stream
	}
	arrivals := make(chan arrival)
	go func() {
		got := map[string]httpstream.Stream{}
		for a := range arrivals {
			got[a.s.Headers().Get(v1.StreamType)] = a.s
			o, err := ParseOptions(a.r.URL.Query())
			if err != nil {
				t.Error(err)
				return
			}
			if len(got) == expectedStreams(o) {
				run(o, got)
				return
			}
		}
	}()
	return func(r *http.Request, s httpstream.Stream) { arrivals <- arrival{r, s} }
}

// expectedStreams is how many streams a SPDY client opens for o: the
// error stream, one per standard stream, the resize stream with a tty.
func expectedStreams(o Options) int {
	n := 1
	for _, on := range []bool{o.Stdin, o.Stdout, o.Stderr, o.TTY} {
		if on {
			n++
		}
	}
	return n
}
