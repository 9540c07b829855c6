// Package userns allocates the host UID/GID ranges of pods that run in a
// user namespace of their own (hostUsers: false), as kubelet's user
// namespace manager: one range of idsPerPod IDs (userNamespaces.idsPerPod,
// 65536 by default) per pod, container ID 0 mapped to the range's first
// host ID, UIDs and GIDs alike, taken from the IDs the node may hand out
// (kubelet's: from idsPerPod to 2^32, or the subordinate IDs of the user
// "kubelet" that getsubids reports). Each allocation is kept in the pod's
// directory (<root-dir>/pods/<uid>/userns, kubelet's file and format) so
// that it survives a restart of the agent: New (and Open, which finds the
// node's IDs first) reads them back. A range is
// released when its pod terminates (Release) or is found gone (Cleanup).
//
// It decides the CRI user namespace of a pod (Mapping): NODE mode unless
// hostUsers is false; a pod range when the runtime handler reports user
// namespace support, else kubelet's error. It does not talk to the runtime
// itself: the caller hands it the handler's support.
package userns
