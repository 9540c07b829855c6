// Package devicemanager is the device plugin side of the container
// manager (deviceplugin.v1beta1), as kubelet's devicemanager behaves:
//
//   - server.go: the registration server on <root-dir>/device-plugins/
//     kubelet.sock. Register checks the API version and the resource name
//     with kubelet's errors, then dials the plugin's socket (beside
//     kubelet.sock). At start the directory's stale sockets are removed
//     (the checkpoint stays), so running plugins see kubelet.sock created
//     again and register again; a kubelet.sock deleted while the agent
//     runs is created again.
//
//   - endpoint.go: one connected plugin: GetDevicePluginOptions, the
//     ListAndWatch stream, Allocate, GetPreferredAllocation (when the
//     plugin's options say it has it) and PreStartContainer (when they ask
//     for it).
//
//   - decide.go: the pure parts — the node's capacity and allocatable per
//     resource (unhealthy devices counted in capacity only; a resource
//     whose last plugin went away keeps its capacity with 0 allocatable for
//     kubelet's 5 min grace, then is reported at 0) and the merge of the plugins' allocate responses
//     into the container's run options (devices, mounts, envs, annotations,
//     CDI device names; the first one wins a conflict, as kubelet).
//
//   - topology.go: the pure topology parts — kubelet's NUMA hints for a
//     request (Hints), the free devices split by a container's affinity
//     (SplitByAffinity) and the choice of devices (Choose: reusable ones,
//     then aligned, preferred, unaligned, without topology, in kubelet's
//     order).
//
//   - admit.go: the Manager as the topology manager's first hint provider
//     (Admission: container and pod hints, allocation within the affinity,
//     devices of finished init containers reused, nothing kept by a pod
//     not admitted) and ReleaseOnReject for the checks after it.
//
//   - checkpoint.go: <root-dir>/device-plugins/kubelet_internal_checkpoint,
//     the allocations (device IDs and each plugin's allocate response) and
//     the registered resources, JSON with a checksum in kubelet's shape
//     (PodDeviceEntries, RegisteredDevices). kernelet's checksum is a
//     CRC-32 of the data's JSON, not kubelet's hash: the two agents do not
//     read each other's file.
//
//   - manager.go: Manager, which keeps the plugins of each resource as
//     kubelet's endpoint store: the newest registration serves the
//     resource, an older plugin of another socket keeps running and its
//     device lists still count, and when one goes away while another runs
//     the devices stay (the newest remaining one serves); only when the
//     last one goes do they turn unhealthy. It allocates a container's devices (an
//     error rejects the pod with kubelet's UnexpectedAdmissionError
//     "Allocate failed due to ..., which is unexpected"), keeps the
//     allocations across agent restarts, gives a container's run options at
//     its creation (ContainerDevices, calling PreStartContainer first, and
//     allocating what a plugin registered after the admission serves within
//     the affinity the container was admitted with),
//     releases a pod's devices when it is gone (Release, Keep), and says
//     what the node offers (Capacity) and what each container holds
//     (Devices, Allocatable: the podresources API).
//
//   - health.go: each held device's health for the container's
//     allocatedResourcesStatus (HealthStatus) and the pods whose devices
//     changed health (HealthUpdates), as kubelet's ResourceHealthStatus.
//
// Not done (issue 27): DRA-backed extended resources, and the
// registration through the plugin watcher (pluginregistration.v1 under
// plugins_registry), which kubelet deprecates for device plugins.
//
// This package never talks to the container runtime nor the API server:
// the runtime side gets plain run options (podconfig.ContainerDevices).
package devicemanager
