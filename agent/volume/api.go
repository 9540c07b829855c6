package volume

import (
	"github.com/kernelet/kernelet/agent/apiobjects"
	"github.com/kernelet/kernelet/internal/clientset"
)

// NewAPIManager builds the manager of a node with an API server: configMaps
// and secrets come through client per strategy (the
// configMapAndSecretChangeDetectionStrategy; Watch: one watch per
// referenced object), a change waking the manager (Changed), and tokens
// from the TokenRequest API. The object manager is returned too: it also
// serves the containers' env and envFrom.
func NewAPIManager(cfg Config, client clientset.Interface, strategy string) (*Manager, *apiobjects.ObjectManager, error) {
	var vm *Manager
	om := apiobjects.NewObjectManager(client, apiobjects.Strategy(strategy), func() {
		if vm != nil {
			vm.Changed()
		}
	})
	cfg.Objects, cfg.Tokens = om, apiobjects.NewTokenManager(client, nil)
	vm, err := NewManager(cfg)
	return vm, om, err
}
