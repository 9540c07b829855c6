package pods

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/internal/podutil"
)

func staticPod(name, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID(hash),
		Labels:      map[string]string{"app": name},
		Annotations: map[string]string{podutil.AnnotationConfigSource: podutil.SourceFile, podutil.AnnotationConfigHash: hash}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}}
}

func mirrorOf(p *v1.Pod, uid string) *v1.Pod {
	m := MirrorPod(p, "node-1", "node-uid")
	m.UID = types.UID(uid)
	return m
}

func names(ps []*v1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name+"/"+string(p.UID))
	}
	return out
}

func TestMirrorPod(t *testing.T) {
	s := staticPod("web-node-1", "h1")
	m := MirrorPod(s, "node-1", "node-uid")
	if m.Annotations[podutil.AnnotationConfigMirror] != "h1" || m.Annotations[podutil.AnnotationConfigHash] != "h1" {
		t.Errorf("annotations %v", m.Annotations)
	}
	if m.UID != "" || m.Spec.NodeName != "node-1" || m.Labels["app"] != "web-node-1" {
		t.Errorf("mirror %+v", m.ObjectMeta)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" || m.OwnerReferences[0].UID != "node-uid" ||
		m.OwnerReferences[0].Controller == nil || !*m.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v", m.OwnerReferences)
	}
	if _, ok := s.Annotations[podutil.AnnotationConfigMirror]; ok {
		t.Error("the static pod was changed")
	}
	if !IsMirrorOf(m, s) || IsMirrorOf(m, staticPod("web-node-1", "h2")) {
		t.Error("IsMirrorOf")
	}
}

func TestMirrorActions(t *testing.T) {
	a, b := staticPod("a", "ha"), staticPod("b", "hb")
	deleting := mirrorOf(a, "ma")
	deleting.DeletionTimestamp = &metav1.Time{}
	regular := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "kube-system", UID: "reg"}}
	for name, tc := range map[string]struct {
		statics, api              []*v1.Pod
		create, delete, conflicts []string
	}{
		"missing mirrors are created": {statics: []*v1.Pod{a, b}, create: []string{"a/ha", "b/hb"}},
		"up-to-date mirrors stay":     {statics: []*v1.Pod{a}, api: []*v1.Pod{mirrorOf(a, "ma")}},
		"a mirror of another version is deleted": {statics: []*v1.Pod{a},
			api: []*v1.Pod{mirrorOf(staticPod("a", "old"), "ma")}, delete: []string{"a/ma"}},
		"a mirror being deleted is deleted for good": {statics: []*v1.Pod{a}, api: []*v1.Pod{deleting}, delete: []string{"a/ma"}},
		"a mirror without static pod is deleted":     {api: []*v1.Pod{mirrorOf(a, "ma")}, delete: []string{"a/ma"}},
		"a regular pod holding the name is a conflict": {statics: []*v1.Pod{b}, api: []*v1.Pod{regular},
			conflicts: []string{"b/hb"}},
		"regular pods are left alone": {api: []*v1.Pod{regular}},
	} {
		t.Run(name, func(t *testing.T) {
			plan := MirrorActions(tc.statics, tc.api)
			for what, pair := range map[string][2][]string{
				"create":    {names(plan.Create), tc.create},
				"delete":    {names(plan.Delete), tc.delete},
				"conflicts": {names(plan.Conflicts), tc.conflicts},
			} {
				got, want := pair[0], pair[1]
				if len(got) != len(want) {
					t.Errorf("%s: got %v, want %v", what, got, want)
					continue
				}
				seen := map[string]bool{}
				for _, g := range got {
					seen[g] = true
				}
				for _, w := range want {
					if !seen[w] {
						t.Errorf("%s: got %v, want %v", what, got, want)
					}
				}
			}
		})
	}
}
