package oomwatch

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/oom"
)

// The scopes of an OOM kill: whose memory limit was hit.
const (
	ScopeContainer = "container"
	ScopePod       = "pod"
	ScopeKubepods  = "kubepods"
	ScopeNode      = "node"
)

// The event reasons and texts of OOM kills.
const (
	// EventOOMKilling is the pod event of every attributed kill.
	EventOOMKilling = "OOMKilling"
	// EventSystemOOM is kubelet's node event of a global OOM.
	EventSystemOOM = "SystemOOM"
)

// SystemOOMMessage is kubelet's message of the SystemOOM node event.
func SystemOOMMessage(comm string, pid int) string {
	return fmt.Sprintf("System OOM encountered, victim process: %s, pid: %d", comm, pid)
}

// OOMKillingMessage is the message of the OOMKilling pod event: victim pid,
// comm, memcg and the scope of the limit that was hit.
func OOMKillingMessage(k oom.Kill, scope string) string {
	memcg := k.CgroupPath()
	if memcg == "" {
		memcg = "unknown"
	}
	return fmt.Sprintf("Memory limit of the %s reached: killed process %d (%s) in memcg %s", scope, k.Pid, k.Comm, memcg)
}

// attribution is who a kill hit and whose limit caused it.
type attribution struct {
	// Victim is the victim's pod and container (nil: not a pod's).
	Victim *oom.PodRef
	Scope  string
}

// inCgroup reports whether cg is dir or below it.
func inCgroup(cg, dir string) bool {
	cg, dir = path.Clean("/"+cg), path.Clean("/"+dir)
	return dir == "/" || cg == dir || strings.HasPrefix(cg, dir+"/")
}

// attribute decides a kill's scope. The limiting memcg (kmsg,
// oom_control) decides when known: a container's cgroup → container, a
// pod's → pod, kubepods or a QoS class → kubepods, the root or anything
// else → node; a global OOM is node. Without it (eBPF alone) the victim's
// own memcg decides: at its limit → its container (or its pod when the
// victim is in no container's cgroup); else pod when every container of
// the pod is limited (podLimited), else kubepods (victim in kubepods) or
// node.
func attribute(k oom.Kill, victim *oom.PodRef, kubepods string, resolve func(cg string) (oom.PodRef, bool), podLimited bool) attribution {
	a := attribution{Victim: victim}
	switch {
	case k.Known.Has(oom.FieldGlobal) && k.Global:
		a.Scope = ScopeNode
	case k.OOMMemcg != "":
		a.Scope = ScopeNode
		if ref, ok := resolve(k.OOMMemcg); ok {
			a.Scope = ScopePod
			if ref.Container != "" {
				a.Scope = ScopeContainer
			}
		} else if k.OOMMemcg != "/" && inCgroup(k.OOMMemcg, kubepods) {
			a.Scope = ScopeKubepods
		}
	case victim != nil && atOwnLimit(k):
		a.Scope = ScopePod
		if victim.Container != "" {
			a.Scope = ScopeContainer
		}
	case victim != nil && podLimited:
		a.Scope = ScopePod
	case victim != nil || inCgroup(k.CgroupPath(), kubepods) && k.CgroupPath() != "":
		a.Scope = ScopeKubepods
	default:
		a.Scope = ScopeNode
	}
	return a
}

// atOwnLimit: the victim's own memcg was at its limit when the victim was
// marked (within 1 MiB: charges are in batches of pages).
func atOwnLimit(k oom.Kill) bool {
	if !k.Known.Has(oom.FieldMemcgUsage) || k.MemcgLimitBytes == bpf.Unlimited || k.MemcgLimitBytes == 0 {
		return false
	}
	return k.MemcgUsageBytes+1<<20 >= k.MemcgLimitBytes
}

// KillRecord is one recent OOM kill as /status serves it.
type KillRecord struct {
	Time      time.Time `json:"time"`
	Pid       int       `json:"pid"`
	Comm      string    `json:"comm"`
	Namespace string    `json:"namespace,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Container string    `json:"container,omitempty"`
	Scope     string    `json:"scope"`
	Memcg     string    `json:"memcg,omitempty"`
	// Sources are the sources that saw it, e.g. "bpf+kmsg".
	Sources string `json:"sources"`
	// Latency is from the kill to its event.
	Latency time.Duration `json:"latency"`
}

// Status is the OOM kill stream of the agent for /status.
type Status struct {
	// Sources are the sources in use, e.g. "bpf (eBPF tp_btf)+kmsg".
	Sources string `json:"sources"`
	// Fallback is why the fallbacks replace eBPF ("" when they do not).
	Fallback string `json:"fallback,omitempty"`
	// CgroupTracer is how cgroup ids are resolved to paths.
	CgroupTracer string `json:"cgroupTracer,omitempty"`
	// Notes are the sources not in use and why.
	Notes []string `json:"notes,omitempty"`
	// Error is why no OOM source runs.
	Error string `json:"error,omitempty"`
	// Recent are the latest kills, oldest first.
	Recent []KillRecord `json:"recent,omitempty"`
	// Total is the number of kills seen since the agent started.
	Total int `json:"total"`
}

// ring keeps the latest n kills.
type ring struct {
	n    int
	recs []KillRecord
}

func (r *ring) add(rec KillRecord) {
	r.recs = append(r.recs, rec)
	if len(r.recs) > r.n {
		r.recs = append(r.recs[:0], r.recs[len(r.recs)-r.n:]...)
	}
}
