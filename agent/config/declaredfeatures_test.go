package config

import (
	"reflect"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestDeclaredFeatures(t *testing.T) {
	cases := map[string]struct {
		gates map[string]bool
		want  []string
	}{
		// Kubelet v1.37.2 declares these four by default.
		"defaults": {want: []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}},
		"a gate turned off is not declared": {gates: map[string]bool{"ExtendWebSocketsToKubelet": false, "InPlacePodLevelResourcesVerticalScaling": false},
			want: []string{"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DeclaredFeatures(&kubeletv1beta1.KubeletConfiguration{FeatureGates: tc.gates}, "v1.37.2")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DeclaredFeatures = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := DeclaredFeatures(&kubeletv1beta1.KubeletConfiguration{}, "1.x"); err == nil {
		t.Error("DeclaredFeatures with a bad version: no error")
	}
}
