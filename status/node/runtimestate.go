package node

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/eviction"
)

// RuntimeStates asks a CRI runtime for its state (Version, Status) at most
// every Period: between two asks, and when an ask fails, the last answer
// stands, so the node goes NotReady only once the runtime stays silent
// (RuntimeStateFromCRI).
type RuntimeStates struct {
	Period time.Duration
	// Now is the clock.
	Now func() time.Time

	mu    sync.Mutex
	state RuntimeState
	asked time.Time
}

// Get is the runtime's state, asked of rs again when the last answer is
// older than Period (or there is none yet); with rs nil (no runtime
// connected) the last answer stands.
func (r *RuntimeStates) Get(ctx context.Context, rs internalapi.RuntimeService) RuntimeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	if rs == nil || (!r.state.LastSync.IsZero() && now.Sub(r.asked) < r.Period) {
		return r.state
	}
	r.asked = now
	if st, ok := askRuntime(ctx, rs, now); ok {
		r.state = st
	}
	return r.state
}

func askRuntime(ctx context.Context, rs internalapi.RuntimeService, now time.Time) (RuntimeState, bool) {
	v, err := rs.Version(ctx, "v1")
	if err != nil {
		return RuntimeState{}, false
	}
	st, err := rs.Status(ctx, false)
	if err != nil {
		return RuntimeState{}, false
	}
	return RuntimeStateFromCRI(v, st, now), true
}

// SetPressure sets the pressure inputs from the eviction manager's
// conditions; with psiCondition (psiNodeCondition on) PSIPressure is
// reported too, false unless the conditions hold it.
func (in *Inputs) SetPressure(conds []v1.NodeConditionType, psiCondition bool) {
	if psiCondition {
		psi := false
		in.PSIPressure = &psi
	}
	for _, c := range conds {
		switch c {
		case v1.NodeMemoryPressure:
			in.MemoryPressure = true
		case v1.NodeDiskPressure:
			in.DiskPressure = true
		case v1.NodePIDPressure:
			in.PIDPressure = true
		case eviction.ConditionPSIPressure:
			if in.PSIPressure != nil {
				*in.PSIPressure = true
			}
		}
	}
}
