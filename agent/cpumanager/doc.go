// Package cpumanager is kubelet's CPU manager with the `none` and `static`
// policies: under `static`, containers of Guaranteed pods with an integer
// CPU request get CPUs of their own (exclusive), taken topology-aware from
// the CPUs not reserved for the system; every other container runs on the
// shared pool (all CPUs minus the exclusive ones; the reserved CPUs are
// always in it).
//
// The pure parts: the node's CPU topology parsed from sysfs (topology.go:
// sockets, cores, NUMA nodes, uncore caches), the choice of CPUs to take
// (take.go, with kubelet's uncore-cache step under
// prefer-align-cpus-by-uncorecache), the static policy over a State
// (policy.go: allocate at admission, release, validate a restored state)
// and the checkpoint's encoding (state.go). The Manager (manager.go) holds
// the policy and its checkpoint `<root-dir>/cpu_manager_state`, allocates
// in its admit handler (kubelet's reason UnexpectedAdmissionError and
// message when CPUs are short, SMTAlignmentError with full-pcpus-only),
// answers the cpuset a new container is created with, and reconciles the
// cpusets of running containers through CRI UpdateContainerResources every
// reconcile period and after each change (metrics.go: kubelet's
// cpu_manager and container_aligned_compute_resources metrics). It never
// creates or kills containers.
package cpumanager
