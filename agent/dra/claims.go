package dra

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/kernelet/kernelet/internal/podutil"
)

// errOptionalNodeOperations is kubelet's error for an allocation that
// skips node operations while DRAOptionalNodeOperations is off (kernelet
// does not implement that gate).
var errOptionalNodeOperations = errors.New("DRAOptionalNodeOperations feature gate is disabled on kubelet")

// newClaimState is the cache entry of an allocated claim: its drivers
// (each device of the allocation counts for its driver), no pod and no
// device prepared yet.
func newClaimState(claim *resourceapi.ResourceClaim) (*ClaimState, error) {
	if claim.Status.Allocation == nil {
		return nil, errors.New("not allocated")
	}
	drivers := map[string]DriverState{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if len(r.SkipNodeOperations) > 0 {
			return nil, errOptionalNodeOperations
		}
		drivers[r.Driver] = DriverState{}
	}
	return &ClaimState{ClaimUID: claim.UID, ClaimName: claim.Name, Namespace: claim.Namespace,
		PodUIDs: sets.New[string](), DriverState: drivers}, nil
}

// podResourceClaims are pod's spec.resourceClaims and, when the scheduler
// backed extended resources of the pod by dynamic resource allocation,
// its special claim (status.extendedResourceClaimStatus), last, as kubelet.
func podResourceClaims(pod *v1.Pod) []v1.PodResourceClaim {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return pod.Spec.ResourceClaims
	}
	out := slices.Clone(pod.Spec.ResourceClaims)
	return append(out, v1.PodResourceClaim{ResourceClaimName: &st.ResourceClaimName})
}

// podClaimNames are the names of the ResourceClaims of pod's
// spec.resourceClaims (those without a generated claim left out) and its
// extended resource claim.
func podClaimNames(pod *v1.Pod) ([]string, error) {
	var out []string
	claims := podResourceClaims(pod)
	for i := range claims {
		name, _, err := resourceclaim.Name(pod, &claims[i])
		if err != nil {
			return nil, err
		}
		if name != nil {
			out = append(out, *name)
		}
	}
	return out, nil
}

// containerRequests maps the ResourceClaim names of c's
// resources.claims to the requests it names ("" for the whole claim), and
// the pod's extended resource claim to the requests serving c's extended
// resources (podutil.ExtendedClaimRequests).
func containerRequests(pod *v1.Pod, c *v1.Container) (map[string][]string, error) {
	byPodClaim := map[string][]string{}
	for _, cl := range c.Resources.Claims {
		byPodClaim[cl.Name] = append(byPodClaim[cl.Name], cl.Request)
	}
	out := map[string][]string{}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		reqs, ok := byPodClaim[pc.Name]
		if !ok {
			continue
		}
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil {
			return nil, err
		}
		if name != nil {
			out[*name] = append(out[*name], reqs...)
		}
	}
	if reqs := podutil.ExtendedClaimRequests(pod, c); len(reqs) > 0 {
		name := pod.Status.ExtendedResourceClaimStatus.ResourceClaimName
		out[name] = append(out[name], reqs...)
	}
	return out, nil
}

// cdiDevices are the CDI device IDs of claim's prepared devices for
// request ("": all; a device without request names serves every
// request), drivers in name order.
func cdiDevices(claim *ClaimState, request string) []string {
	var out []string
	drivers := make([]string, 0, len(claim.DriverState))
	for d := range claim.DriverState {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	for _, d := range drivers {
		for _, dev := range claim.DriverState[d].Devices {
			if request == "" || len(dev.RequestNames) == 0 || slices.Contains(dev.RequestNames, request) {
				out = append(out, dev.CDIDeviceIDs...)
			}
		}
	}
	return out
}

// checkClaimForPod is kubelet's check that pod may use claim: a claim
// generated from a template must be owned by the pod, and every claim
// reserved for it.
func checkClaimForPod(pod *v1.Pod, claim *resourceapi.ResourceClaim, mustCheckOwner bool) error {
	if mustCheckOwner {
		if err := resourceclaim.IsForPod(pod, claim, false); err != nil {
			return err
		}
	}
	if !resourceclaim.IsReservedForPod(pod, claim, false) {
		return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, claim.Name, claim.UID)
	}
	return nil
}
