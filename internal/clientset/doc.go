// Package clientset is kernelet's API client: typed clients for the
// resources the agent reads and writes (pods, nodes, services, config
// maps, secrets, service accounts and their tokens, events, Leases,
// RuntimeClasses, TokenReviews, SubjectAccessReviews; the storage the CSI
// volume manager reads: PersistentVolumeClaims, PersistentVolumes,
// CSINodes, CSIDrivers, VolumeAttachments), built from
// client-go's generic typed clients (k8s.io/client-go/gentype) over a
// scheme of only those API groups, and ListWatch, an informer's list and
// watch over one of them.
//
// client-go's full clientset (k8s.io/client-go/kubernetes) registers
// every built-in API group in its scheme when the program starts and
// links a client for each; for a node agent that is several MiB of
// resident memory spent on groups it never calls (issue 9, the footprint
// goal). The interfaces here are subsets of the clientset's typed
// interfaces, so a client-go fake clientset satisfies them too
// (clientsettest adapts one for unit tests). cmd/kernelet's
// TestFootprintDependencies keeps the full clientset out of the agent.
package clientset
