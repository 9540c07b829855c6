package csi

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func count(n int32) *storagev1.VolumeNodeResources { return &storagev1.VolumeNodeResources{Count: &n} }

func TestWithDriver(t *testing.T) {
	other := storagev1.CSINodeDriver{Name: "other.csi", NodeID: "n0"}
	for name, tc := range map[string]struct {
		drivers     []storagev1.CSINodeDriver
		info        DriverInfo
		want        []storagev1.CSINodeDriver
		wantChanged bool
	}{
		"added after the others": {
			drivers:     []storagev1.CSINodeDriver{other},
			info:        DriverInfo{NodeID: "n1", MaxVolumesPerNode: 7, Topology: map[string]string{"zone": "a", "rack": "r"}},
			want:        []storagev1.CSINodeDriver{other, {Name: "d.csi", NodeID: "n1", TopologyKeys: []string{"rack", "zone"}, Allocatable: count(7)}},
			wantChanged: true,
		},
		"same: unchanged": {
			drivers: []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "n1", TopologyKeys: []string{"zone"}, Allocatable: count(7)}, other},
			info:    DriverInfo{NodeID: "n1", MaxVolumesPerNode: 7, Topology: map[string]string{"zone": "a"}},
			want:    []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "n1", TopologyKeys: []string{"zone"}, Allocatable: count(7)}, other},
		},
		"no limit drops the count": {
			drivers:     []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "n1", TopologyKeys: []string{}, Allocatable: count(7)}},
			info:        DriverInfo{NodeID: "n1"},
			want:        []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "n1", TopologyKeys: []string{}}},
			wantChanged: true,
		},
		"new node ID replaces the entry": {
			drivers:     []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "old", TopologyKeys: []string{}}},
			info:        DriverInfo{NodeID: "new"},
			want:        []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "new", TopologyKeys: []string{}}},
			wantChanged: true,
		},
		"limit clamped to int32": {
			info:        DriverInfo{NodeID: "n1", MaxVolumesPerNode: 1 << 40},
			want:        []storagev1.CSINodeDriver{{Name: "d.csi", NodeID: "n1", TopologyKeys: []string{}, Allocatable: count(1<<31 - 1)}},
			wantChanged: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, changed := WithDriver(tc.drivers, "d.csi", tc.info)
			if changed != tc.wantChanged || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WithDriver = %+v, %v; want %+v, %v", got, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

func TestWithoutDriver(t *testing.T) {
	a, b := storagev1.CSINodeDriver{Name: "a"}, storagev1.CSINodeDriver{Name: "b"}
	if got, changed := WithoutDriver([]storagev1.CSINodeDriver{a, b}, "a"); !changed || !reflect.DeepEqual(got, []storagev1.CSINodeDriver{b}) {
		t.Errorf("WithoutDriver(a) = %v, %v", got, changed)
	}
	if got, changed := WithoutDriver([]storagev1.CSINodeDriver{b}, "a"); changed || len(got) != 1 {
		t.Errorf("WithoutDriver(missing) = %v, %v", got, changed)
	}
}

func TestNodeAnnotation(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations, labels map[string]string
		install             bool
		info                DriverInfo
		wantAnnotation      string
		wantLabels          map[string]string
		wantChanged         bool
		wantErr             bool
	}{
		"first driver": {
			install: true, info: DriverInfo{NodeID: "n1", Topology: map[string]string{"zone": "a"}},
			wantAnnotation: `{"d.csi":"n1"}`, wantLabels: map[string]string{"zone": "a"}, wantChanged: true,
		},
		"second driver kept beside the first": {
			annotations: map[string]string{AnnotationNodeID: `{"a.csi":"x"}`},
			install:     true, info: DriverInfo{NodeID: "n1"},
			wantAnnotation: `{"a.csi":"x","d.csi":"n1"}`, wantChanged: true,
		},
		"already there": {
			annotations: map[string]string{AnnotationNodeID: `{"d.csi":"n1"}`},
			install:     true, info: DriverInfo{NodeID: "n1"},
			wantAnnotation: `{"d.csi":"n1"}`,
		},
		"topology collision": {
			labels:  map[string]string{"zone": "b"},
			install: true, info: DriverInfo{NodeID: "n1", Topology: map[string]string{"zone": "a"}},
			wantErr: true,
		},
		"bad annotation": {
			annotations: map[string]string{AnnotationNodeID: `{`},
			install:     true, info: DriverInfo{NodeID: "n1"}, wantErr: true,
		},
		"uninstall the last driver drops the annotation": {
			annotations: map[string]string{AnnotationNodeID: `{"d.csi":"n1"}`},
			wantChanged: true,
		},
		"uninstall keeps the others": {
			annotations:    map[string]string{AnnotationNodeID: `{"a.csi":"x","d.csi":"n1"}`},
			wantAnnotation: `{"a.csi":"x"}`, wantChanged: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tc.annotations, Labels: tc.labels}}
			var changed bool
			var err error
			if tc.install {
				changed, err = NodeWithDriver(node, "d.csi", tc.info)
			} else {
				changed, err = NodeWithoutDriver(node, "d.csi")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if changed != tc.wantChanged || node.Annotations[AnnotationNodeID] != tc.wantAnnotation {
				t.Errorf("changed %v annotation %q; want %v %q", changed, node.Annotations[AnnotationNodeID], tc.wantChanged, tc.wantAnnotation)
			}
			for k, v := range tc.wantLabels {
				if node.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, node.Labels[k], v)
				}
			}
		})
	}
}
