package node

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeStateFromCRI is the RuntimeState of a CRI Version answer and a
// Status answer received at `at`. With status nil (the call failed) the
// result has no LastSync: an agent that already had a state keeps it
// instead, so that the node turns not ready with "container runtime is
// down" RuntimeDownAfter after the last answer, as kubelet's.
func RuntimeStateFromCRI(version *runtimeapi.VersionResponse, status *runtimeapi.StatusResponse, at time.Time) RuntimeState {
	var rt RuntimeState
	if version != nil {
		rt.Name, rt.Version = version.GetRuntimeName(), version.GetRuntimeVersion()
	}
	if status == nil {
		return rt
	}
	rt.LastSync = at
	for _, c := range status.GetStatus().GetConditions() {
		rt.Conditions = append(rt.Conditions, RuntimeCondition{Type: c.GetType(), Status: c.GetStatus(),
			Reason: c.GetReason(), Message: c.GetMessage()})
	}
	for _, h := range status.GetRuntimeHandlers() {
		rt.Handlers = append(rt.Handlers, RuntimeHandler{Name: h.GetName(),
			RecursiveReadOnlyMounts: h.GetFeatures().GetRecursiveReadOnlyMounts(),
			UserNamespaces:          h.GetFeatures().GetUserNamespaces()})
	}
	if f := status.GetFeatures(); f != nil {
		v := f.GetSupplementalGroupsPolicy()
		rt.SupplementalGroupsPolicy = &v
	}
	return rt
}

// ImagesFromCRI are the Images of a CRI ListImages answer.
func ImagesFromCRI(imgs []*runtimeapi.Image) []Image {
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, Image{RepoTags: img.GetRepoTags(), RepoDigests: img.GetRepoDigests(), SizeBytes: img.GetSize()})
	}
	return out
}
