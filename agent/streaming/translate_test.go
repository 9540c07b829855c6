package streaming

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rc "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

func TestExitStatus(t *testing.T) {
	exit3 := exec.CodeExitError{Err: errors.New("exit status 3"), Code: 3}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	for name, tc := range map[string]struct {
		err                   error
		status                string
		reason                metav1.StatusReason
		code                  int32
		exitCause, msgHasText string
	}{
		"success":         {nil, metav1.StatusSuccess, "", 0, "", ""},
		"exit code":       {exit3, metav1.StatusFailure, rc.NonZeroExitCodeReason, 0, "3", "exit code 3"},
		"wrapped exit":    {fmt.Errorf("stream: %w", exit3), metav1.StatusFailure, rc.NonZeroExitCodeReason, 0, "3", "exit code 3"},
		"API status":      {notFound, metav1.StatusFailure, metav1.StatusReasonNotFound, 404, "", `pods "p" not found`},
		"any other error": {errors.New("boom"), metav1.StatusFailure, metav1.StatusReasonInternalError, 500, "", "boom"},
	} {
		t.Run(name, func(t *testing.T) {
			st := ExitStatus(tc.err)
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != tc.status || st.Reason != tc.reason || st.Code != tc.code ||
				!strings.Contains(st.Message, tc.msgHasText) {
				t.Errorf("ExitStatus(%v) = %+v", tc.err, st)
			}
			var cause string
			if st.Details != nil {
				for _, c := range st.Details.Causes {
					if c.Type == rc.ExitCodeCauseType {
						cause = c.Message
					}
				}
			}
			if cause != tc.exitCause {
				t.Errorf("exit code cause = %q, want %q", cause, tc.exitCause)
			}
		})
	}
}

func TestChannelTypes(t *testing.T) {
	R, W, I := wsstream.ReadChannel, wsstream.WriteChannel, wsstream.IgnoreChannel
	for _, tc := range []struct {
		o     Options
		want  []wsstream.ChannelType
		first int
	}{
		{Options{Stdin: true, Stdout: true, Stderr: true}, []wsstream.ChannelType{R, W, W, W, I, R}, rc.StreamStdOut},
		{Options{Stdin: true, Stdout: true, TTY: true}, []wsstream.ChannelType{R, W, I, W, R, R}, rc.StreamStdOut},
		{Options{Stderr: true}, []wsstream.ChannelType{I, I, W, W, I, R}, rc.StreamStdErr},
		{Options{Stdin: true}, []wsstream.ChannelType{R, I, I, W, I, R}, rc.StreamErr},
	} {
		if got := channelTypes(tc.o); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("channelTypes(%+v) = %v, want %v", tc.o, got, tc.want)
		}
		if got := firstOutput(tc.o); got != tc.first {
			t.Errorf("firstOutput(%+v) = %d, want %d", tc.o, got, tc.first)
		}
	}
}

func TestSizeQueue(t *testing.T) {
	q := sizeQueue{json.NewDecoder(strings.NewReader(`{"Width":80,"Height":24}{"Width":100,"Height":40}not json`))}
	for _, want := range []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 100, Height: 40}} {
		if got := q.Next(); got == nil || *got != want {
			t.Fatalf("Next() = %v, want %v", got, want)
		}
	}
	if got := q.Next(); got != nil {
		t.Errorf("Next() after garbage = %v, want nil", got)
	}
}

// execScript is the fake runtime's command: it reads stdin to its end;
// "exit N" exits N, else stdin is echoed to stdout as "out:<stdin>" and
// "err" written to stderr; with a tty, the first terminal size is
// written to stdout as "size WxH" instead.
func execScript(o Options, s map[string]httpstream.Stream) {
	status := metav1.Status{Status: metav1.StatusSuccess}
	var in []byte
	if o.Stdin {
		in, _ = io.ReadAll(s["stdin"])
	}
	switch code, isExit := strings.CutPrefix(string(in), "exit "); {
	case isExit:
		status = metav1.Status{Status: metav1.StatusFailure, Reason: rc.NonZeroExitCodeReason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: rc.ExitCodeCauseType, Message: code}}}}
	case o.TTY:
		var size remotecommand.TerminalSize
		_ = json.NewDecoder(s["resize"]).Decode(&size)
		_, _ = fmt.Fprintf(s["stdout"], "size %dx%d", size.Width, size.Height)
	default:
		_, _ = fmt.Fprintf(s["stdout"], "out:%s", in)
		if o.Stderr {
			_, _ = io.WriteString(s["stderr"], "err")
		}
	}
	for _, name := range []string{"stdout", "stderr"} {
		if st, ok := s[name]; ok {
			_ = st.Close()
		}
	}
	msg, _ := json.Marshal(status)
	_, _ = s["error"].Write(msg)
	_ = s["error"].Close()
}

// translatorServer serves Translator for the runtime at runtimeURL, the
// request's query (kubelet's) choosing the streams. The request's
// context is never canceled: net/http does not promise to cancel it for
// a hijacked connection whose client has gone, so Translator must see
// that itself.
func translatorServer(t *testing.T, runtimeURL *url.URL) *httptest.Server {
	return idleTranslatorServer(t, runtimeURL, 0)
}

// idleTranslatorServer is translatorServer with Translator.IdleTimeout idle.
func idleTranslatorServer(t *testing.T, runtimeURL *url.URL, idle time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithoutCancel(r.Context()))
		o, err := ParseOptions(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		u := *runtimeURL
		u.RawQuery = r.URL.RawQuery
		Translator{URL: &u, Options: o, IdleTimeout: idle}.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type fixedSize struct{ sent bool }

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	if f.sent {
		return nil
	}
	f.sent = true
	return &remotecommand.TerminalSize{Width: 80, Height: 24}
}

// A WebSocket v5 client (client-go's) runs sessions through Translator
// against a SPDY runtime: stdin is closed by the v5 CLOSE signal, stdout
// and stderr come back, an exit code reaches the client, terminal sizes
// reach the runtime, a runtime's refusal is the client's error.
func TestTranslatorSessions(t *testing.T) {
	for name, tc := range map[string]struct {
		query          string
		stdin          string
		tty            bool
		refuse         bool
		stdout, stderr string
		exitCode       int
		errHas         string
	}{
		"stdin echoed":    {query: "input=1&output=1&error=1", stdin: "hello", stdout: "out:hello", stderr: "err"},
		"stdout only":     {query: "output=1", stdout: "out:"},
		"non-zero exit":   {query: "input=1&output=1&error=1", stdin: "exit 3", exitCode: 3},
		"tty resize":      {query: "output=1&tty=1", tty: true, stdout: "size 80x24"},
		"runtime refuses": {query: "output=1", refuse: true, errHas: "refused"},
	} {
		t.Run(name, func(t *testing.T) {
			var rt *url.URL
			if tc.refuse {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					http.Error(w, "session refused", http.StatusNotFound)
				}))
				t.Cleanup(srv.Close)
				rt, _ = url.Parse(srv.URL)
			} else {
				rt, _ = spdyRuntime(t, rc.StreamProtocolV4Name, streamsOf(t, execScript))
			}
			srv := translatorServer(t, rt)
			ex, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: srv.URL}, "GET", srv.URL+"/exec?"+tc.query)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			o := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
			if strings.Contains(tc.query, "input=1") {
				o.Stdin = strings.NewReader(tc.stdin)
			}
			if strings.Contains(tc.query, "error=1") {
				o.Stderr = &stderr
			}
			if tc.tty {
				o.TerminalSizeQueue = &fixedSize{}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = ex.StreamWithContext(ctx, o)
			var exit exec.ExitError
			switch {
			case tc.exitCode != 0:
				if !errors.As(err, &exit) || exit.ExitStatus() != tc.exitCode {
					t.Fatalf("err = %v, want exit code %d", err, tc.exitCode)
				}
			case tc.errHas != "":
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want one with %q", err, tc.errHas)
				}
			case err != nil:
				t.Fatal(err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout, stderr = %q, %q; want %q, %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

// A request that is not a WebSocket upgrade is refused before any
// session starts.
func TestTranslatorRefusesPlainRequest(t *testing.T) {
	srv := translatorServer(t, &url.URL{Scheme: "http", Host: "127.0.0.1:1"})
	resp, err := http.Get(srv.URL + "/exec/ns/pod/c?output=1")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
}

// A client that goes away ends the session: the connection to the
// runtime is closed though the command still runs.
func TestTranslatorClientGone(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	rt, closed := spdyRuntime(t, rc.StreamProtocolV4Name, streamsOf(t, func(_ Options, s map[string]httpstream.Stream) {
		_, _ = io.WriteString(s["stdout"], "started")
		<-hang
	}))
	srv := translatorServer(t, rt)
	ex, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: srv.URL}, "GET", srv.URL+"/attach?output=1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := writerFunc(func(p []byte) (int, error) {
		if len(p) > 0 {
			cancel()
		}
		return len(p), nil
	})
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: started}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the client's cancellation", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime's connection is still open 10 s after the client went away")
	}
}

// A session nothing crosses for IdleTimeout (streamingConnectionIdleTimeout)
// is ended: the client's call returns and the runtime's connection closes,
// though the command still runs.
func TestTranslatorIdleTimeout(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	rt, closed := spdyRuntime(t, rc.StreamProtocolV4Name, streamsOf(t, func(_ Options, s map[string]httpstream.Stream) {
		<-hang
	}))
	srv := idleTranslatorServer(t, rt, 300*time.Millisecond)
	ex, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: srv.URL}, "GET", srv.URL+"/attach?output=1")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		ended <- ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard})
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("an idle session still open 10 s after a 300 ms idle timeout")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime's connection is still open 10 s after the session timed out")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
