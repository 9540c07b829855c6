package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/oom"
)

// AnnotationOOMScoreAdj is the annotation of a served pod that tells, per
// container, the oom_score_adj kernelet requested, the one in the runtime's
// spec and the one the process runs with — they differ where the runtime
// or the kernel refuses the request (containerd's restrict_oom_score_adj,
// no CAP_SYS_RESOURCE). Its value is a JSON object keyed by container name.
const AnnotationOOMScoreAdj = "kernelet.io/oom-score-adj"

// OOMScoreApplied reads how the oom_score_adj requested for container id
// was applied: the value in the runtime's own spec and the process id from
// the verbose ContainerStatus (containerd's "info"), the process's value
// from /proc.
func (m *Manager) OOMScoreApplied(ctx context.Context, id string, requested int) (oom.Applied, error) {
	a := oom.Applied{Requested: requested}
	resp, err := m.rs.ContainerStatus(ctx, id, true)
	if err != nil {
		return a, fmt.Errorf("status of container %s: %w", id, err)
	}
	pid, specAdj, known, err := processOfInfo(resp.GetInfo())
	if err != nil {
		return a, fmt.Errorf("container %s: %w", id, err)
	}
	a.Runtime, a.RuntimeKnown = specAdj, known
	a.Effective, err = oom.ReadScoreAdj(m.proc, pid)
	if err != nil {
		return a, fmt.Errorf("container %s: %w", id, err)
	}
	return a, nil
}

// processOfInfo reads the process id and runtimeSpec.process.oomScoreAdj
// from a verbose ContainerStatus "info" entry (containerd's format).
func processOfInfo(info map[string]string) (pid, adj int, adjKnown bool, err error) {
	raw, ok := info["info"]
	if !ok {
		return 0, 0, false, errors.New("the runtime's verbose status has no \"info\" entry")
	}
	var v struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Process struct {
				OOMScoreAdj *int `json:"oomScoreAdj"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return 0, 0, false, fmt.Errorf("verbose status info: %w", err)
	}
	if v.Pid <= 0 {
		return 0, 0, false, fmt.Errorf("verbose status info: no pid: %w", oom.ErrNoProcess)
	}
	if p := v.RuntimeSpec.Process.OOMScoreAdj; p != nil {
		return v.Pid, *p, true, nil
	}
	return v.Pid, 0, false, nil
}

// ContainerOOMScore is one container's applied oom_score_adj, as the
// annotation shows it.
type ContainerOOMScore struct {
	ContainerID string `json:"containerID"`
	Requested   int    `json:"requested"`
	// Runtime is the value in the runtime's spec; nil when not known.
	Runtime   *int `json:"runtime,omitempty"`
	Effective int  `json:"effective"`
	// RefusedBy says who changed the value when the process runs with
	// another one than requested (oom.Applied.RefusedBy: runtime, kernel,
	// process or unknown); empty otherwise.
	RefusedBy string `json:"refusedBy,omitempty"`
}

func newContainerOOMScore(id string, a oom.Applied) ContainerOOMScore {
	c := ContainerOOMScore{ContainerID: id, Requested: a.Requested, Effective: a.Effective, RefusedBy: a.RefusedBy()}
	if a.RuntimeKnown {
		v := a.Runtime
		c.Runtime = &v
	}
	return c
}

// OOMScores tracks the applied oom_score_adj of every running container of
// the pods it is shown (Observe): it serves them as the pod annotation
// AnnotationOOMScoreAdj and as the metrics
// kernelet_container_oom_score_adj_requested and
// kernelet_container_oom_score_adj_effective (labels namespace, pod,
// container), and logs a refusal once per pod and container name.
type OOMScores struct {
	mu     sync.Mutex
	pods   map[types.UID]*podOOMScores
	logged map[types.UID]map[string]bool
}

type podOOMScores struct {
	namespace, name string
	byName          map[string]ContainerOOMScore
}

// NewOOMScores returns an empty tracker.
func NewOOMScores() *OOMScores {
	return &OOMScores{pods: map[types.UID]*podOOMScores{}, logged: map[types.UID]map[string]bool{}}
}

// Observe checks every running container of st that it has not seen yet
// (a new container ID) with read, computing the requested value from the
// pod spec with the node's memory capacity. Containers that no longer run
// are dropped. Errors (a process that exited meanwhile) leave the
// container out until the next Observe.
func (s *OOMScores) Observe(ctx context.Context, pod *v1.Pod, st *PodStatus, memoryCapacity int64,
	read func(ctx context.Context, id string, requested int) (oom.Applied, error)) {
	log := klog.FromContext(ctx)
	s.mu.Lock()
	ps := s.pods[pod.UID]
	if ps == nil {
		ps = &podOOMScores{namespace: pod.Namespace, name: pod.Name, byName: map[string]ContainerOOMScore{}}
		s.pods[pod.UID] = ps
	}
	known := map[string]ContainerOOMScore{}
	for k, v := range ps.byName {
		known[k] = v
	}
	s.mu.Unlock()

	running := map[string]string{}
	for _, c := range st.Containers {
		if c.State == ContainerRunning {
			if _, dup := running[c.Name]; !dup { // newest first
				running[c.Name] = c.ID
			}
		}
	}
	next := map[string]ContainerOOMScore{}
	for name, id := range running {
		if prev, ok := known[name]; ok && prev.ContainerID == id {
			next[name] = prev
			continue
		}
		spec := specContainer(pod, name)
		if spec == nil {
			continue
		}
		requested := podconfig.ContainerOOMScoreAdj(pod, spec, memoryCapacity)
		a, err := read(ctx, id, requested)
		if err != nil {
			log.V(4).Info("oom_score_adj not read", "container", name, "containerID", id, "err", err)
			continue
		}
		next[name] = newContainerOOMScore(id, a)
		if a.Refused() && s.firstRefusal(pod.UID, name) {
			log.Info("oom_score_adj refused: the container runs with the effective value",
				"pod", klog.KObj(pod), "podUID", pod.UID, "container", name,
				"requested", a.Requested, "runtime", a.Runtime, "effective", a.Effective, "refusedBy", a.RefusedBy())
		}
	}
	s.mu.Lock()
	if cur := s.pods[pod.UID]; cur != nil { // not forgotten meanwhile
		cur.byName = next
	}
	s.mu.Unlock()
}

func (s *OOMScores) firstRefusal(uid types.UID, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logged[uid] == nil {
		s.logged[uid] = map[string]bool{}
	}
	if s.logged[uid][name] {
		return false
	}
	s.logged[uid][name] = true
	return true
}

// Get returns the applied values of pod uid's running containers by name.
func (s *OOMScores) Get(uid types.UID) map[string]ContainerOOMScore {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.pods[uid]
	if ps == nil || len(ps.byName) == 0 {
		return nil
	}
	out := make(map[string]ContainerOOMScore, len(ps.byName))
	for k, v := range ps.byName {
		out[k] = v
	}
	return out
}

// Annotation returns the AnnotationOOMScoreAdj value of pod uid; false
// when none of its containers has been checked.
func (s *OOMScores) Annotation(uid types.UID) (string, bool) {
	m := s.Get(uid)
	if m == nil {
		return "", false
	}
	b, err := json.Marshal(m) // map keys are sorted
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Forget drops pod uid (it was removed).
func (s *OOMScores) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
	delete(s.logged, uid)
}

var (
	oomScoreRequestedDesc = prometheus.NewDesc("kernelet_container_oom_score_adj_requested",
		"The oom_score_adj kernelet requested for a running container (kubelet's policy).",
		[]string{"namespace", "pod", "container"}, nil)
	oomScoreEffectiveDesc = prometheus.NewDesc("kernelet_container_oom_score_adj_effective",
		"The oom_score_adj a running container's process has; differs from the requested value where the runtime or the kernel refused it.",
		[]string{"namespace", "pod", "container"}, nil)
)

// Describe implements prometheus.Collector.
func (s *OOMScores) Describe(ch chan<- *prometheus.Desc) {
	ch <- oomScoreRequestedDesc
	ch <- oomScoreEffectiveDesc
}

// Collect implements prometheus.Collector.
func (s *OOMScores) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		ns, pod, ctr string
		c            ContainerOOMScore
	}
	s.mu.Lock()
	var rows []row
	for _, ps := range s.pods {
		for name, c := range ps.byName {
			rows = append(rows, row{ps.namespace, ps.name, name, c})
		}
	}
	s.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].ns+"/"+rows[i].pod+"/"+rows[i].ctr < rows[j].ns+"/"+rows[j].pod+"/"+rows[j].ctr
	})
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(oomScoreRequestedDesc, prometheus.GaugeValue, float64(r.c.Requested), r.ns, r.pod, r.ctr)
		ch <- prometheus.MustNewConstMetric(oomScoreEffectiveDesc, prometheus.GaugeValue, float64(r.c.Effective), r.ns, r.pod, r.ctr)
	}
}

// specContainer finds container name among pod's app and init containers.
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// ParseOOMScoreAnnotation decodes an AnnotationOOMScoreAdj value.
func ParseOOMScoreAnnotation(v string) (map[string]ContainerOOMScore, error) {
	out := map[string]ContainerOOMScore{}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationOOMScoreAdj, err)
	}
	return out, nil
}
