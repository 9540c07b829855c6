package volumemanager

import (
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimAndPV are a PVC (request, status capacity, resize status,
// allocatedResources when alloc) and its PV (capacity).
func claimAndPV(request, statusCap, pvCap string, rs v1.ClaimResourceStatus, alloc bool) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "7"},
		Spec:   v1.PersistentVolumeClaimSpec{Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(request)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(statusCap)}}}
	if rs != "" {
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: rs}
	}
	if alloc {
		pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: resource.MustParse(pvCap)}
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(pvCap)}}}
	return pvc, pv
}

func TestPlanResize(t *testing.T) {
	for name, tc := range map[string]struct {
		request, statusCap, pvCap  string
		rs                         v1.ClaimResourceStatus
		alloc, readOnly            bool
		known                      string // the node's claim size ("": the status capacity)
		failedFinal                bool
		flow                       resizeFlow
		alreadyUpdated, infeasible bool
	}{
		"same size":                       {request: "1Gi", statusCap: "1Gi", pvCap: "1Gi", flow: resizeNone},
		"node resize pending":             {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizePending, alloc: true, flow: resizeRecovery},
		"node resize in progress":         {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizeInProgress, alloc: true, flow: resizeRecovery},
		"controller still resizing":       {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimControllerResizeInProgress, alloc: true, flow: resizeNone},
		"node resize infeasible":          {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizeInfeasible, alloc: true, flow: resizeNone},
		"older resizer":                   {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", flow: resizeLegacy},
		"read-only claim":                 {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizePending, alloc: true, readOnly: true, flow: resizeReadOnly},
		"expanded on another node":        {request: "2Gi", statusCap: "2Gi", pvCap: "2Gi", alloc: true, known: "1Gi", flow: resizeRecovery, alreadyUpdated: true},
		"expanded here already":           {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizePending, alloc: true, known: "2Gi", flow: resizeNone},
		"request changed after a failure": {request: "3Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizeInProgress, alloc: true, failedFinal: true, flow: resizeRecovery, infeasible: true},
		"failure, same request":           {request: "2Gi", statusCap: "1Gi", pvCap: "2Gi", rs: v1.PersistentVolumeClaimNodeResizeInProgress, alloc: true, failedFinal: true, flow: resizeRecovery},
	} {
		t.Run(name, func(t *testing.T) {
			pvc, pv := claimAndPV(tc.request, tc.statusCap, tc.pvCap, tc.rs, tc.alloc)
			st := resizeState{claimSize: pvc.Status.Capacity[v1.ResourceStorage], failedFinal: tc.failedFinal}
			if tc.known != "" {
				st.claimSize = resource.MustParse(tc.known)
			}
			p := planResize(pvc, pv, tc.readOnly, st)
			if p.flow != tc.flow || p.alreadyUpdated != tc.alreadyUpdated || p.markInfeasible != tc.infeasible {
				t.Errorf("plan %+v, want flow %d alreadyUpdated %v infeasible %v", p, tc.flow, tc.alreadyUpdated, tc.infeasible)
			}
			if tc.flow != resizeNone && p.newSize.Cmp(resource.MustParse(tc.pvCap)) != 0 {
				t.Errorf("new size %s, want the PV's %s", p.newSize.String(), tc.pvCap)
			}
		})
	}
}

func TestResizeFinishedAndFailed(t *testing.T) {
	pvc, _ := claimAndPV("2Gi", "1Gi", "2Gi", v1.PersistentVolumeClaimNodeResizeInProgress, true)
	pvc.Status.AllocatedResourceStatuses["example.com/other"] = v1.PersistentVolumeClaimControllerResizeInProgress
	pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{
		{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue},
		{Type: "ModifyingVolume", Status: v1.ConditionTrue},
	}
	now := metav1.Now()
	failed := resizeFailed(pvc, errors.New("boom"), false, now)
	if len(failed.Status.Conditions) != 3 || failed.Status.Conditions[2].Type != v1.PersistentVolumeClaimNodeResizeError ||
		failed.Status.Conditions[2].Message != "failed to expand pvc with boom" {
		t.Errorf("failed conditions %+v", failed.Status.Conditions)
	}
	if failed.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("a failure changed the resize status: %v", failed.Status.AllocatedResourceStatuses)
	}
	if inf := resizeFailed(pvc, errors.New("boom"), true, now); inf.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("infeasible status %v", inf.Status.AllocatedResourceStatuses)
	}
	done := resizeFinished(failed, resource.MustParse("2Gi"))
	if c := done.Status.Capacity[v1.ResourceStorage]; c.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("capacity %s", c.String())
	}
	if _, ok := done.Status.AllocatedResourceStatuses[v1.ResourceStorage]; ok || len(done.Status.AllocatedResourceStatuses) != 1 {
		t.Errorf("resize statuses %v, want the storage one gone only", done.Status.AllocatedResourceStatuses)
	}
	if len(done.Status.Conditions) != 1 || done.Status.Conditions[0].Type != "ModifyingVolume" {
		t.Errorf("conditions %+v, want the resize ones gone", done.Status.Conditions)
	}
	alone, _ := claimAndPV("2Gi", "1Gi", "2Gi", v1.PersistentVolumeClaimNodeResizePending, true)
	if got := resizeFinished(alone, resource.MustParse("2Gi")); got.Status.AllocatedResourceStatuses != nil {
		t.Errorf("empty resize statuses %v, want nil", got.Status.AllocatedResourceStatuses)
	}
	if pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInProgress || len(pvc.Status.Conditions) != 2 {
		t.Error("the original PVC was changed")
	}
}

func TestClaimStatusPatch(t *testing.T) {
	pvc, _ := claimAndPV("2Gi", "1Gi", "2Gi", v1.PersistentVolumeClaimNodeResizePending, true)
	for _, checked := range []bool{true, false} {
		b, err := claimStatusPatch(pvc, withStorageStatus(pvc, v1.PersistentVolumeClaimNodeResizeInProgress), checked)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Status struct {
				Statuses map[string]string `json:"allocatedResourceStatuses"`
			} `json:"status"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if p.Status.Statuses["storage"] != "NodeResizeInProgress" {
			t.Errorf("patch %s", b)
		}
		if want := map[bool]string{true: "7", false: ""}[checked]; p.Metadata.ResourceVersion != want {
			t.Errorf("checked %v: resourceVersion %q in %s", checked, p.Metadata.ResourceVersion, b)
		}
	}
}

func TestClassifyExpandError(t *testing.T) {
	for code, want := range map[codes.Code]expandError{
		codes.FailedPrecondition: {inUse: true},
		codes.OutOfRange:         {infeasible: true},
		codes.InvalidArgument:    {infeasible: true},
		codes.NotFound:           {infeasible: true},
		codes.Internal:           {},
	} {
		e := classifyExpandError(status.Error(code, "x"))
		if e.inUse != want.inUse || e.infeasible != want.infeasible {
			t.Errorf("%v: %+v", code, e)
		}
		if got := e.Error(); got != "Expander.NodeExpand failed to expand the volume : rpc error: code = "+code.String()+" desc = x" {
			t.Errorf("message %q", got)
		}
	}
}
