package pods

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kernelet/kernelet/internal/podutil"
)

// OwnedConditions are the pod conditions the agent computes; any other
// condition in the API server's status (PodScheduled from the scheduler,
// DisruptionTarget from a controller, readiness gates) is kept as it is.
var OwnedConditions = map[v1.PodConditionType]bool{
	v1.PodReadyToStartContainers: true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReady:                  true,
	v1.PodResizePending:          true,
	v1.PodResizeInProgress:       true,
	v1.AllContainersRestarting:   true,
}

// MergeStatus is the status to send for a pod whose API server status is
// api when the agent computed ours: ours, with the conditions the agent
// does not own taken from api, and — when api is terminal and ours is
// another phase — api's phase, reason and message, as a terminal phase
// never changes (kubelet's "illegal phase transition");
// api's extendedResourceClaimStatus and nodeAllocatableResourceClaimStatuses
// (the scheduler's) and, when ours has none, its resourceClaimStatuses
// and volumeHealth.
// A pod with generation gen reports it as observedGeneration.
func MergeStatus(api, ours v1.PodStatus, gen int64) v1.PodStatus {
	out := *ours.DeepCopy()
	var conds []v1.PodCondition
	seen := map[v1.PodConditionType]bool{}
	for _, c := range out.Conditions {
		seen[c.Type] = true
	}
	for _, c := range api.Conditions {
		if !OwnedConditions[c.Type] && !seen[c.Type] {
			conds = append(conds, c)
		}
	}
	// The API server's own conditions first, in its order, then ours.
	out.Conditions = append(conds, out.Conditions...)
	if podutil.IsTerminal(api.Phase) && out.Phase != api.Phase {
		out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
	}
	if out.StartTime == nil && api.StartTime != nil {
		out.StartTime = api.StartTime
	}
	if out.NominatedNodeName == "" {
		out.NominatedNodeName = api.NominatedNodeName
	}
	// What the control plane records of dynamic resource allocation is
	// not the node's to change (the NodeRestriction admission refuses a
	// node's change of extendedResourceClaimStatus).
	if len(out.ResourceClaimStatuses) == 0 {
		out.ResourceClaimStatuses = api.ResourceClaimStatuses
	}
	// The volumes' health survives a status without it (an agent that
	// restarted and has not asked the drivers yet), as with kubelet.
	if len(out.VolumeHealth) == 0 {
		out.VolumeHealth = api.VolumeHealth
	}
	out.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = api.NodeAllocatableResourceClaimStatuses
	if gen > 0 {
		out.ObservedGeneration = gen
	}
	return out
}

// StatusEqual reports whether two statuses say the same, ignoring the
// order of conditions and probe times (of conditions of one type, the last
// counts). It copies nothing: the statuses are taken by value and only
// their top-level slices are swapped out before the deep comparison (a
// status is compared on every write; copies made it a tenth of the status
// writer's allocations).
func StatusEqual(a, b v1.PodStatus) bool {
	if !conditionsEqual(a.Conditions, b.Conditions) {
		return false
	}
	a.Conditions, b.Conditions = nil, nil
	if len(a.HostIPs) == 0 {
		a.HostIPs = nil
	}
	if len(b.HostIPs) == 0 {
		b.HostIPs = nil
	}
	if len(a.PodIPs) == 0 {
		a.PodIPs = nil
	}
	if len(b.PodIPs) == 0 {
		b.PodIPs = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

// conditionsEqual compares conditions as a set by type (the last of a type
// counts), ignoring LastProbeTime.
func conditionsEqual(a, b []v1.PodCondition) bool {
	n := 0
	for i := range a {
		if lastOfType(a, a[i].Type) != i {
			continue
		}
		n++
		j := lastOfType(b, a[i].Type)
		if j < 0 {
			return false
		}
		x, y := a[i], b[j]
		x.LastProbeTime, y.LastProbeTime = metaZero, metaZero
		if !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	for i := range b {
		if lastOfType(b, b[i].Type) == i {
			n--
		}
	}
	return n == 0
}

// lastOfType is the index of the last condition of type t (-1: none).
func lastOfType(cs []v1.PodCondition, t v1.PodConditionType) int {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Type == t {
			return i
		}
	}
	return -1
}

// StatusPatch is the strategic merge patch that turns the status api into
// next, with the pod's UID as a precondition (a pod re-created under the
// same name is never patched with another pod's status).
func StatusPatch(uid types.UID, api, next v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: api})
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Pod{Status: next})
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	return withUID(patch, uid)
}

// withUID puts the UID precondition {"metadata":{"uid":…}} in front of
// the members of patch (a JSON object), without decoding it.
func withUID(patch []byte, uid types.UID) ([]byte, error) {
	body := bytes.TrimSpace(patch)
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return nil, fmt.Errorf("status patch: not a JSON object: %.40q", body)
	}
	id, err := json.Marshal(string(uid))
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	rest := bytes.TrimSpace(body[1:])
	out := make([]byte, 0, len(body)+len(id)+24)
	out = append(append(append(out, `{"metadata":{"uid":`...), id...), '}')
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// ReasonReadinessGatesNotReady is kubelet's Ready reason when the
// containers are ready but a readiness gate is not.
const ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"

// ApplyReadinessGates turns st's Ready condition False, as kubelet does,
// while a readiness gate's condition (set by someone else, found in st) is
// missing or not True; Ready is left alone when the containers are not
// ready anyway or every gate is True.
func ApplyReadinessGates(st *v1.PodStatus, gates []v1.PodReadinessGate) {
	if len(gates) == 0 {
		return
	}
	byType := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range st.Conditions {
		byType[c.Type] = c
	}
	if byType[v1.ContainersReady].Status != v1.ConditionTrue {
		return
	}
	var msgs []string
	for _, g := range gates {
		c, ok := byType[g.ConditionType]
		switch {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	if len(msgs) == 0 {
		return
	}
	for i, c := range st.Conditions {
		if c.Type != v1.PodReady {
			continue
		}
		if c.Status != v1.ConditionFalse {
			c.LastTransitionTime = metav1Now()
		}
		c.Status, c.Reason, c.Message = v1.ConditionFalse, ReasonReadinessGatesNotReady, strings.Join(msgs, ", ")
		st.Conditions[i] = c
	}
}
