package eviction

import "time"

// Crossings is when each met threshold's current crossing was first
// observed — the kernel notification (Wake) that started the decision
// which first saw it met, else that decision's stats read — and whether
// an eviction for it has started since. The eviction reaction latency
// (kernelet_eviction_reaction_seconds) is measured from it.
type Crossings map[thresholdKey]crossing

type crossing struct {
	at      time.Time
	reacted bool
}

// UpdateCrossings returns the crossings of met: a threshold met before
// keeps its crossing, a newly met one is observed at seen; thresholds no
// longer met are dropped, so the next crossing is measured afresh.
func UpdateCrossings(met []Threshold, prev Crossings, seen time.Time) Crossings {
	out := Crossings{}
	for _, t := range met {
		k := keyOf(t)
		c, ok := prev[k]
		if !ok {
			c = crossing{at: seen}
		}
		out[k] = c
	}
	return out
}

// React marks that an eviction for t started at now and returns its
// reaction latency: now minus when t's crossing was observed, minus t's
// grace period (a soft threshold waits for it by policy; the latency is
// what kernelet adds), at least 0. ok is false when t has no crossing or
// an eviction already started for it: one observation per crossing.
func (c Crossings) React(t Threshold, now time.Time) (latency time.Duration, ok bool) {
	k := keyOf(t)
	cr, found := c[k]
	if !found || cr.reacted {
		return 0, false
	}
	cr.reacted = true
	c[k] = cr
	return max(now.Sub(cr.at)-t.GracePeriod, 0), true
}

// decisionSeen is when a decision's observations were made: the wake that
// triggered it if any (it precedes the read), else the stats read time,
// else now.
func decisionSeen(woke, read, now time.Time) time.Time {
	switch {
	case !woke.IsZero() && (read.IsZero() || woke.Before(read)):
		return woke
	case !read.IsZero():
		return read
	}
	return now
}
