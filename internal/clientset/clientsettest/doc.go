// Package clientsettest adapts client-go's full clientset to
// clientset.Interface (FromClientset), for tests only: unit tests drive
// kernelet's packages with client-go's fake clientset (reactors, recorded
// actions), e2e tests may pass a real one. The agent itself never imports
// this package (cmd/kernelet's TestFootprintDependencies checks).
package clientsettest
