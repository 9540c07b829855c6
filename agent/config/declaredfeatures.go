package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// DeclaredFeatures is the Node's status.declaredFeatures for kc on a node
// of Kubernetes version kubeVersion (NodeDeclaredFeatures, GA in v1.37):
// the features of the registry kubelet and the scheduler share
// (k8s.io/component-helpers/nodedeclaredfeatures) that the node has —
// each one's gates enabled in kc and implemented by kernelet (a gate
// kernelet refuses is off, whatever kubelet's default). The scheduler
// places a pod that needs a feature (e.g. a RestartAllContainers rule)
// only on a node declaring it. The runtime features (user namespaces with
// the host network, bind mount options) are not claimed: kernelet
// implements neither. Sorted, as the registry names them.
func DeclaredFeatures(kc *kubeletv1beta1.KubeletConfiguration, kubeVersion string) ([]string, error) {
	v, err := version.ParseSemantic(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("declared features: node version %q: %w", kubeVersion, err)
	}
	fw := nodedeclaredfeatures.New(features.AllFeatures)
	return fw.DiscoverNodeFeatures(&nodedeclaredfeatures.NodeConfiguration{
		FeatureGates: implementedGates{kc},
		Version:      v,
	}), nil
}

// implementedGates answers the registry's questions about gates: on when
// enabled in the configuration and implemented by kernelet.
type implementedGates struct {
	kc *kubeletv1beta1.KubeletConfiguration
}

func (g implementedGates) Enabled(name string) bool {
	k := gateSupport(name).Kernelet
	return FeatureEnabled(g.kc, name) && (k == Implemented || k == BothValues)
}
