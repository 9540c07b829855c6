// Package dra is the node side of Dynamic Resource Allocation
// (resource.k8s.io/v1) as kubelet v1.37.2's DRA manager behaves:
//
//   - plugins.go: the handler of the "DRAPlugin" type for
//     agent/pluginmanager. A DRA driver's kubelet plugin registers under
//     its driver name and lists the gRPC services it serves; kubelet
//     v1.37.2 speaks v1.DRAPlugin (k8s.io/kubelet/pkg/apis/dra/v1) and
//     v1beta1.DRAPlugin, the newest both sides have wins, with kubelet's
//     errors otherwise. Calls time out after 45 s. Each plugin's gRPC
//     connection is followed (connWatch, a gRPC stats handler; a new one
//     is asked for when it ends): a driver is usable while one of its
//     plugins is connected, and calls go to the latest connected one.
//     When a driver stops being usable (its last plugin deregistered, or
//     its plugins' connections ended) its ResourceSlices of this node are
//     deleted 30 s later unless it became usable again; at start every
//     ResourceSlice of the node is deleted (kubelet's wiping).
//
//   - claims.go: the pure parts — the drivers of an allocated claim, a
//     pod's claims (resourceclaim.Name; with the special claim of its
//     extended resources backed by DRA, status.extendedResourceClaimStatus,
//     last), the CDI devices of a container's claims and requests (the
//     special claim's requests mapped to the container's extended
//     resources: internal/podutil.ExtendedClaimRequests).
//
//   - state.go: the claim cache (claim, its pods, each driver's prepared
//     devices with their CDI device IDs) and its checkpoint
//     <root-dir>/dra_manager_state in kubelet's format (the JSON of a
//     DRACheckpoint in Data, its CRC-32 in Checksum).
//
//   - manager.go: Manager. PrepareResources (before a pod's sandbox is
//     created) fetches the pod's ResourceClaims, checks they are allocated
//     and reserved for the pod, records the pod in the cache and calls
//     NodePrepareResources once per driver for the claims not yet
//     prepared; UnprepareResources (once the pod's containers stopped)
//     drops the pod from its claims and calls NodeUnprepareResources for
//     a claim whose last pod went; CDIDevices gives a container the CDI
//     device IDs of the claims (and requests) it names, passed to the
//     runtime as CRI CDIDevices. Run reconciles every 60 s: claims of pods
//     the agent no longer knows are unprepared. The errors are kubelet's
//     (the runtime records FailedPrepareDynamicResources with them).
//
//   - health.go: the DRAResourceHealth stream of a plugin that offers it
//     (v1, v1alpha1), the devices' health (Unknown past the report's
//     timeout), the containers' allocatedResourcesStatus
//     (claim:<name>[/<request>]) and the pods to refresh on a change;
//     healthstate.go: that health checkpointed in kubelet's
//     <root-dir>/dra_health_state.
//
// Extended resources backed by DRA (DRAExtendedResource) need nothing
// else here: admission leaves the mapped requests out of the fit
// (podworkers.ExtendedFit) and the device plugins skip them
// (agent/devicemanager); the special claim's devices have no health entry
// (kubelet reports resources.claims only). Not done: optional node
// operations (skipNodeOperations is refused, as kubelet with
// DRAOptionalNodeOperations off). metrics.go has kubelet's DRA metrics;
// ContainerClaims feeds the podresources API (the special claim after the
// container's own, for a container a mapping names). A Manager needs the API server (standalone nodes
// cannot fetch ResourceClaims: their pods with claims fail to prepare).
// A nil *Manager (no node plugins: --runonce) fails every preparation.
package dra
