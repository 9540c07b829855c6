package pressure

import (
	"context"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// Contention returns samples (the KEP-5394 conditions to report, with
// their thresholds) with the PSI each one watches read now: the "full"
// line of /proc/pressure/{memory,io} for the System conditions, of
// kubepods' {memory,io}.pressure for the Kubepods ones (on a hybrid host
// from the unified tree). A file that cannot be read leaves its samples
// unknown (the conditions keep their status).
func (s *Signals) Contention(ctx context.Context, samples []eviction.ContentionSample) []eviction.ContentionSample {
	if len(samples) == 0 {
		return nil
	}
	var node cgroups.NodeStats
	var pods cgroups.CgroupStats
	nodeOK := s.stats.r.Node(ctx, &node) == nil
	podsOK := s.stats.r.Cgroup(ctx, s.stats.kubepods, cgroups.StatPressure, &pods) == nil
	out := make([]eviction.ContentionSample, len(samples))
	for i, c := range samples {
		kubepods, res := eviction.ContentionSource(c.Type)
		ps, ok := node.Pressure, nodeOK
		if kubepods {
			ps, ok = pods.Pressure, podsOK
		}
		line := ps.Memory.Full
		if res == "io" {
			line = ps.IO.Full
		}
		c.Known = ok && line.Known
		c.Avg10, c.Avg60 = line.Avg10, line.Avg60
		out[i] = c
	}
	return out
}
