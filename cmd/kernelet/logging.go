package main

import (
	"fmt"

	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // logging.format: json, as kubelet
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// applyLogging applies the configuration's logging settings (the flags
// --v, --vmodule, --logging-format, --log-flush-frequency are overrides
// of them) through component-base's logs API as kubelet does: the text
// or the JSON format, verbosity, vmodule, flush frequency; with the
// logging feature gates of featureGates.
func applyLogging(kc *kubeletv1beta1.KubeletConfiguration) error {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	known := fg.GetAll()
	gates := map[string]bool{}
	for name, on := range kc.FeatureGates {
		if _, ok := known[featuregate.Feature(name)]; ok {
			gates[name] = on
		}
	}
	if err := fg.SetFromMap(gates); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	return logsapi.ValidateAndApply(&kc.Logging, fg)
}
