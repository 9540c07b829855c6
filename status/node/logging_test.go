package node

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestDemoted(t *testing.T) {
	for name, tc := range map[string]struct {
		verbosity int
		want      []string
	}{
		"default verbosity hides the lease controller": {verbosity: 0},
		"v=3 still hides it":                           {verbosity: 3},
		"v=4 shows errors and plain lines": {verbosity: 4, want: []string{
			`"level"=4 "msg"="failed to update lease" "err"="boom"`,
			`"level"=4 "msg"="fallback to ensure lease"`,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			base := funcr.New(func(prefix, args string) { got = append(got, args) }, funcr.Options{Verbosity: tc.verbosity})
			l := demoted(base, leaseLogVerbosity)
			l.Error(errors.New("boom"), "failed to update lease")
			l.Info("fallback to ensure lease")
			l.V(2).Info("detail")
			if !slices.Equal(got, tc.want) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
