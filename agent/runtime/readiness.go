package runtime

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// WithReadiness returns st with the ready field of pod's running
// containers as ready says (by name and runtime container ID) and the
// ContainersReady and Ready conditions that follow (runtime.Readiness, as
// the status is made); changed tells whether anything differs.
func WithReadiness(pod *v1.Pod, st v1.PodStatus, now time.Time, ready func(name, id string) bool) (v1.PodStatus, bool) {
	if podutil.IsTerminal(st.Phase) {
		// A terminal pod (finished, evicted, past its deadline) keeps the
		// conditions its end gave it, whatever a probe says meanwhile.
		return st, false
	}
	out := *st.DeepCopy()
	changed := false
	for _, list := range [][]v1.ContainerStatus{out.InitContainerStatuses, out.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if cs.State.Running == nil {
				continue
			}
			id := cs.ContainerID
			if j := strings.Index(id, "://"); j >= 0 {
				id = id[j+3:]
			}
			if r := ready(cs.Name, id); r != cs.Ready {
				cs.Ready, changed = r, true
			}
		}
	}
	if !changed {
		return st, false
	}
	ok, reason, msg := Readiness(out.Phase, UnreadyContainers(pod, &out))
	for i := range out.Conditions {
		c := &out.Conditions[i]
		if c.Type != v1.ContainersReady && c.Type != v1.PodReady {
			continue
		}
		was := c.Status
		c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
		if !ok {
			c.Status, c.Reason, c.Message = v1.ConditionFalse, reason, msg
		}
		if c.Status != was {
			c.LastTransitionTime = metav1.NewTime(now)
		}
	}
	return out, true
}
