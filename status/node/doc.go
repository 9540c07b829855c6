// Package node reports this node to the API server as kubelet does: it
// registers the Node object (or adopts an existing one), keeps its status
// current (capacity and allocatable, addresses, nodeInfo, conditions,
// images, daemon endpoints), renews its Lease in kube-node-lease, and
// records the Node's events.
//
// The decisions are pure functions over values: Capacity and Allocatable,
// NewNode, Reconcile, SetStatus, Conditions and ReadyError, StatusChanged
// and ShouldPatch, StatusPatch and MetadataPatch, KubeletVersion,
// ParseNodeLabels (--node-labels, refused as kubelet refuses them). The
// effects sit beside them: ReadMachine reads the
// host once (files under a root prefix, so tests use fixtures), and the
// Controller runs the registration, the status loop and the Lease
// renewal (DesiredLease decides, leaseRenewer writes) through the
// internal/clientset clients it is given. RuntimeStateFromCRI and ImagesFromCRI turn CRI answers into
// Inputs; RuntimeStates asks the runtime at most once a period, keeping the
// last answer, and Inputs.SetPressure turns the eviction manager's
// conditions into the pressure inputs.
//
// What kubelet does that this package reproduces (behaviour, not code):
//   - Registration creates the Node with the labels kubelet owns
//     (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and the
//     beta.kubernetes.io forms), --node-labels, the
//     volumes.kubernetes.io/controller-managed-attach-detach annotation,
//     registerWithTaints, and a full status. If the Node exists it is
//     adopted: the owned labels and the annotation are reconciled; taints,
//     other labels, annotations and the spec (podCIDR, providerID,
//     unschedulable) are left alone. registerNode: false only reads the
//     Node and updates its status.
//   - Status is computed every nodeStatusUpdateFrequency from the Node just
//     read, and PATCHed (strategic merge, status subresource) when it
//     changed apart from heartbeat times, or when nodeStatusReportFrequency
//     passed; up to 5 tries per period. After start, until a status the
//     agent computed says Ready (at most 2 min; a Node still Ready from
//     before a restart does not count), the inputs are checked every
//     100 ms so that Ready is written at once; the first status waits (up
//     to 2 s) for the runtime to have been asked, so that a restart does
//     not turn the Node NotReady only because the runtime check had not
//     run yet. Capacity keeps resources kernelet
//     does not manage (extended resources an admin advertised); a huge page
//     size the kernel no longer has is removed.
//   - Status fields: capacity/allocatable, addresses (InternalIPs, then
//     Hostname; the list is replaced, never merged by type), nodeInfo
//     (kubeletVersion "v1.37.2+kernelet.<version>", containerRuntimeVersion
//     "containerd://1.7.2", swap only with swap, kubeProxyVersion empty),
//     daemonEndpoints, images (the nodeStatusMaxImages largest, 50 by
//     default; digests then tags, 5 names each), runtimeHandlers and
//     features from the CRI status.
//   - Conditions MemoryPressure, DiskPressure, PIDPressure and Ready with
//     kubelet's reasons and messages, and kernelet's own
//     kernelet.io/PSIPressure when psiNodeCondition is on; other
//     conditions (NetworkUnavailable, node-problem-detector's) are kept.
//     Events NodeHas…, NodeReady, NodeNotReady on transitions ("Node
//     <name> status is now: <reason>"), on a Node reference whose UID is
//     the node name; the Starting event says "Starting kernelet.".
//   - The Lease is held and named after the node, renewed every
//     nodeLeaseDurationSeconds/4, owned by the Node, and created again when
//     deleted; a failed renewal is retried from 200 ms, doubling, up to 7 s
//     apart (DesiredLease decides the object, leaseRenewer writes it).
//
// Unlike kubelet, a Node deleted while the agent runs is registered again
// (kubelet needs a restart). An API outage is logged once when it starts
// and once when it ends (each loop's further failures at V(4));
// Controller.Status tells the times of the last successes and the
// last error.
//
// The package never reads the kernel after start nor imports the pod side,
// and it talks to the runtime only through RuntimeStates (CRI Version and
// Status, on the RuntimeService the caller passes): what changes (runtime
// state, health, IPs, images, pressure) comes from the Inputs function
// the agent provides.
package node
