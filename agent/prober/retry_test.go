package prober

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A probe that errors is tried up to maxProbeRetries times in one period
// before the error counts; an answer (success or failure) ends the tries.
func TestRunWithRetries(t *testing.T) {
	for name, tc := range map[string]struct {
		errs      int // calls that error before the command runs
		want      Outcome
		wantCalls int
	}{
		"answers at once":         {errs: 0, want: OutcomeSuccess, wantCalls: 1},
		"errors twice then works": {errs: 2, want: OutcomeSuccess, wantCalls: 3},
		"errors every time":       {errs: 10, want: OutcomeUnknown, wantCalls: maxProbeRetries},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			exec := func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				calls++
				if calls <= tc.errs {
					return nil, nil, errors.New("runtime unavailable")
				}
				return []byte("ok"), nil, nil
			}
			w := &worker{m: &Manager{h: newHandlers(exec, "")}, ctx: t.Context(),
				probe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}
			got, _, err := w.runWithRetries(target{containerID: "c1"})
			if got != tc.want || calls != tc.wantCalls || (tc.want == OutcomeUnknown) != (err != nil) {
				t.Errorf("outcome %v err %v after %d calls; want %v after %d", got, err, calls, tc.want, tc.wantCalls)
			}
		})
	}
}
