package node

import (
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRuntimeStateFromCRI(t *testing.T) {
	version := &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "v1.7.2"}
	status := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"}}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}}, {Name: "runc"}},
		Features:        &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
	for name, tc := range map[string]struct {
		version *runtimeapi.VersionResponse
		status  *runtimeapi.StatusResponse
		ready   string
	}{
		"answered": {version: version, status: status,
			ready: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"},
		"status failed":  {version: version, ready: "container runtime status check may not have completed yet"},
		"never answered": {ready: "container runtime status check may not have completed yet"},
	} {
		t.Run(name, func(t *testing.T) {
			rt := RuntimeStateFromCRI(tc.version, tc.status, t0)
			err := ReadyError(Inputs{Runtime: rt}, fullCapacity(), t0)
			if err == nil || err.Error() != tc.ready {
				t.Errorf("ReadyError = %v, want %q", err, tc.ready)
			}
			if tc.status != nil {
				got := fmt.Sprintf("%s %+v %v", ContainerRuntimeVersion(rt.Name, rt.Version), rt.Handlers, *rt.SupplementalGroupsPolicy)
				if want := "containerd://1.7.2 [{Name: RecursiveReadOnlyMounts:true UserNamespaces:false} {Name:runc RecursiveReadOnlyMounts:false UserNamespaces:false}] true"; got != want {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		})
	}
}

func TestImagesFromCRI(t *testing.T) {
	got := ImagesFromCRI([]*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"a:1"}, RepoDigests: []string{"a@sha256:x"}, Size: 42}})
	if len(got) != 1 || got[0].SizeBytes != 42 || got[0].RepoTags[0] != "a:1" || got[0].RepoDigests[0] != "a@sha256:x" {
		t.Errorf("ImagesFromCRI = %+v", got)
	}
}
