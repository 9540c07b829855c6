// Command featuregates writes agent/config/featuregates_table.go: every
// feature gate kubelet v1.37.2 knows, with its stage, its default and
// whether it is locked to that default at version 1.37 (kubelet's binary
// version; the minimum compatibility version is 1.36, as kubelet's), the
// gates it depends on, and whether kubelet's own code reads it.
//
//	go run ./hack/featuregates               # rewrite the table (make featuregates)
//	go run ./hack/featuregates -check        # fail if the committed table differs (make featuregates-check)
//
// It reads the Go sources of the Kubernetes modules in the module cache
// (go env GOMODCACHE) with go/parser, never running them. Kubelet's gate
// set is what its binary registers in utilfeature.DefaultMutableFeatureGate:
//
//   - component-base/featuregate: AllAlpha and AllBeta;
//   - kubernetes pkg/features (its versioned map and its dependencies),
//     which also lists some gates of apiserver, apiextensions-apiserver,
//     controller-manager and component-base/zpages by reference;
//   - the packages whose init registers their whole map because kubelet
//     imports them: apiserver pkg/features, apiextensions-apiserver
//     pkg/features, component-base/zpages/features;
//   - client-go's features (added by pkg/features' client adapter);
//   - component-base/logs/api/v1 (kubelet's cmd init) and
//     component-base/metrics/features (pkg/kubelet/server's init).
//
// A gate registered twice must have the same specs (as featuregate
// demands); the generator fails otherwise. "Kubelet reads it" means a
// non-test Go file under cmd/kubelet, pkg/kubelet, pkg/volume,
// pkg/credentialprovider, pkg/probe or pkg/securitycontext refers to the
// gate's constant: a reproducible approximation of "the gate touches the
// node", which kernelet's config tests use to demand a decision for each.
//
// The modules k8s.io/apiextensions-apiserver and k8s.io/controller-manager
// are not dependencies of kernelet; when they are missing from the module
// cache the generator fetches them with `go mod download` (the Go module
// proxy, as any Go build would).
package main
