package streaming

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseRequest: no exec/attach/port-forward path or query panics the
// parsers; a parsed target has no empty or slash-containing part, and a
// parsed stream set has at least one stream and never stderr with a tty.
func FuzzParseRequest(f *testing.F) {
	f.Add("default/web/app", true, "output=1&error=1")
	f.Add("ns/pod/0e1f-uid/c", true, "input=1&tty=1&error=1")
	f.Add("/ns//pod/", false, "")
	f.Add("ns/pod", false, "port=80,8080")
	f.Fuzz(func(t *testing.T, rest string, withContainer bool, raw string) {
		if tg, ok := ParseTarget(rest, withContainer); ok {
			parts := []string{tg.Namespace, tg.Pod}
			if withContainer {
				parts = append(parts, tg.Container)
			}
			for _, p := range parts {
				if p == "" || strings.Contains(p, "/") {
					t.Fatalf("target %+v from %q has a bad part %q", tg, rest, p)
				}
			}
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseOptions(q)
		if err != nil {
			if !errors.Is(err, ErrNoStreams) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !o.Stdin && !o.Stdout && !o.Stderr {
			t.Fatalf("no stream accepted: %+v", o)
		}
		if o.TTY && o.Stderr {
			t.Fatalf("stderr kept with a tty: %+v", o)
		}
	})
}
