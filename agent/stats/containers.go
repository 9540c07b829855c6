package stats

import (
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// ContainersOf are the current and last instances of a container of a
// pod status, for an Inventory.
func ContainersOf(cs *v1.ContainerStatus) []Container {
	var out []Container
	add := func(st v1.ContainerState, id string) {
		c := Container{Name: cs.Name, ID: runtimeID(id), Image: cs.Image}
		switch {
		case st.Running != nil:
			c.Running, c.StartTime = true, st.Running.StartedAt.Time
		case st.Terminated != nil:
			c.ID = runtimeID(st.Terminated.ContainerID)
			c.StartTime = st.Terminated.StartedAt.Time
			c.OOMKilled = st.Terminated.Reason == "OOMKilled"
		default:
			return
		}
		if c.ID != "" {
			out = append(out, c)
		}
	}
	add(cs.State, cs.ContainerID)
	add(cs.LastTerminationState, "")
	return out
}

// runtimeID strips the scheme of a status container ID
// (containerd://<id>).
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// BootTime is the node's boot time from /proc/stat (zero when unread),
// for Config.BootTime.
func BootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}
			}
			return time.Unix(sec, 0)
		}
	}
	return time.Time{}
}
