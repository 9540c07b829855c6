package logs

import (
	"errors"
	"net/url"
	"testing"
	"time"
)

// FuzzParseOptions: no /containerLogs query panics the parser; a query is
// either valid options (which Validate accepts and CRIOptions converts) or
// an error that is ErrDecode (400) or ErrInvalid (422).
func FuzzParseOptions(f *testing.F) {
	for _, q := range []string{
		"follow=true&tailLines=10", "tail=all&timestamps=1", "sinceSeconds=5&sinceTime=2026-11-25T07:00:00Z",
		"limitBytes=0", "stream=Stderr&tailLines=3", "previous=false&sinceTime=yesterday", "tailLines=9223372036854775808",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseOptions(q)
		if err != nil {
			if !errors.Is(err, ErrDecode) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error is neither ErrDecode nor ErrInvalid: %v", err)
			}
			return
		}
		if err := Validate(o); err != nil {
			t.Fatalf("parsed options do not validate: %v", err)
		}
		c := CRIOptions(o, time.Unix(1_800_000_000, 0))
		if c.Follow != o.Follow || c.Timestamp != o.Timestamps {
			t.Fatalf("CRI options lost follow/timestamps: %+v vs %+v", c, o)
		}
	})
}
