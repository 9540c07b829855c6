package oomwatch

import (
	"context"
	"errors"
	"os"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/oom"
)

// ProtectAgent sets the agent's own oom_score_adj to value (oomScoreAdj,
// -999 by default) and says what the kernel let it have: without
// CAP_SYS_RESOURCE a negative value is refused and the effective one is
// logged.
func ProtectAgent(ctx context.Context, value int32) {
	log := klog.FromContext(ctx)
	const file = "/proc/self/oom_score_adj"
	werr := os.WriteFile(file, []byte(strconv.Itoa(int(value))), 0)
	eff, rerr := oom.ReadScoreAdj("/proc", os.Getpid())
	switch {
	case rerr != nil:
		log.Error(errors.Join(werr, rerr), "Agent oom_score_adj unknown", "asked", value)
	case werr != nil || eff != int(value):
		log.Info("Warning: the kernel refused the agent's oom_score_adj", "asked", value, "effective", eff, "err", werr)
	default:
		log.Info("Agent oom_score_adj set", "value", eff)
	}
}
