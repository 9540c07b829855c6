package dra

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// UnprepareResources drops pod from its claims and unprepares those it
// was the last pod of (kubelet's UnprepareDynamicResources; idempotent).
// The claims are the cache's, or the pod's own when the cache has none
// for it.
func (m *Manager) UnprepareResources(ctx context.Context, pod *v1.Pod) error {
	if m == nil {
		return nil
	}
	m.claimsMu.Lock()
	names := m.claims.claimsOf(pod.UID)
	m.claimsMu.Unlock()
	if len(names) == 0 {
		var err error
		if names, err = podClaimNames(pod); err != nil {
			return fmt.Errorf("unprepare dynamic resources: %w", err)
		}
	}
	start := time.Now()
	err := m.unprepare(ctx, pod.UID, pod.Namespace, names)
	m.cfg.Metrics.operation("UnprepareResources", start, err)
	if err != nil {
		return fmt.Errorf("unprepare dynamic resources: %w", err)
	}
	return nil
}

// unprepare drops pod uid from the claims names of namespace ns and calls
// NodeUnprepareResources, once per driver, for the claims no other pod
// uses; their cache entries go once their drivers succeeded.
func (m *Manager) unprepare(ctx context.Context, uid types.UID, ns string, names []string) error {
	batches := map[string][]*drapb.Claim{}
	var last []string
	m.claimsMu.Lock()
	for _, name := range names {
		ci := m.claims.claims[claimKey(ns, name)]
		if ci == nil || !ci.PodUIDs.Has(string(uid)) {
			continue // never prepared for this pod
		}
		if ci.PodUIDs.Len() > 1 {
			ci.PodUIDs.Delete(string(uid))
			continue
		}
		ci.unpreparing = true // no new pod joins it until it is gone
		last = append(last, name)
		req := &drapb.Claim{Namespace: ci.Namespace, Uid: string(ci.ClaimUID), Name: ci.ClaimName}
		for _, driver := range sortedDrivers(ci.DriverState) {
			batches[driver] = append(batches[driver], req)
		}
	}
	m.claimsMu.Unlock()
	for driver, reqs := range batches {
		if err := m.callUnprepare(ctx, driver, reqs); err != nil {
			return err
		}
	}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	for _, name := range last {
		delete(m.claims.claims, claimKey(ns, name))
	}
	if err := m.claims.sync(); err != nil {
		return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
	}
	return nil
}

// callUnprepare calls NodeUnprepareResources of driver for reqs.
func (m *Manager) callUnprepare(ctx context.Context, driver string, reqs []*drapb.Claim) error {
	p, err := m.pluginFor(driver)
	if err != nil {
		return err
	}
	resp, err := p.unprepare(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: reqs})
	if err != nil {
		return fmt.Errorf("NodeUnprepareResources: %w", err)
	}
	errs := map[string]string{}
	for uid, res := range resp.GetClaims() {
		errs[uid] = res.GetError()
	}
	return checkResults("NodeUnprepareResources", reqs, errs)
}

// CDIDevices are the CDI device IDs of the claims c names (kubelet's
// GetResources): every prepared device of a claim named whole, those of
// the request for a claim named with a request, those of the extended
// resource claim's requests mapped to c's extended resources.
func (m *Manager) CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error) {
	reqs, err := containerRequests(pod, c)
	if err != nil || len(reqs) == 0 {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("internal error: no claim info for the ResourceClaims of container %s", c.Name)
	}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	var out []string
	for _, name := range sortedKeys(reqs) {
		ci := m.claims.claims[claimKey(pod.Namespace, name)]
		if ci == nil {
			return nil, fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", name, pod.Namespace)
		}
		for _, r := range reqs[name] {
			out = append(out, cdiDevices(&ci.ClaimState, r)...)
		}
	}
	return out, nil
}

// Claims are the cache's claims pod uid uses, copies (podresources).
func (m *Manager) Claims(uid types.UID) []ClaimState {
	if m == nil {
		return nil
	}
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	var out []ClaimState
	for _, ci := range m.claims.claims {
		if ci.PodUIDs.Has(string(uid)) {
			out = append(out, ci.copyState())
		}
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ContainerClaims are copies of the cache's claims c names and, last, the
// pod's extended resource claim when a request mapping names c (kubelet's
// GetContainerClaimInfos, for the podresources API); an error when one is
// not in the cache.
func (m *Manager) ContainerClaims(pod *v1.Pod, c *v1.Container) ([]ClaimState, error) {
	reqs, err := containerRequests(pod, c)
	if err != nil || m == nil {
		return nil, err
	}
	var extended string
	if podutil.HasExtendedClaim(pod, c.Name) {
		extended = pod.Status.ExtendedResourceClaimStatus.ResourceClaimName
	}
	delete(reqs, extended)
	m.claimsMu.Lock()
	defer m.claimsMu.Unlock()
	var out []ClaimState
	for _, name := range sortedKeys(reqs) {
		ci := m.claims.claims[claimKey(pod.Namespace, name)]
		if ci == nil {
			return nil, fmt.Errorf("unable to get information for ResourceClaim %s", name)
		}
		out = append(out, ci.copyState())
	}
	if extended != "" {
		ci := m.claims.claims[claimKey(pod.Namespace, extended)]
		if ci == nil {
			return nil, fmt.Errorf("unable to get claim info for claim %s in namespace %s", extended, pod.Namespace)
		}
		out = append(out, ci.copyState())
	}
	return out, nil
}

// copyState is the claim's state, its maps copied.
func (ci *claimInfo) copyState() ClaimState {
	cp := ci.ClaimState
	cp.PodUIDs = ci.PodUIDs.Clone()
	cp.DriverState = maps.Clone(ci.DriverState)
	return cp
}
