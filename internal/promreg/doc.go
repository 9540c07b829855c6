// Package promreg registers a package's collectors with the registry of
// the endpoint that serves them (Register: in order, stopping at the
// first error), so that each package that produces metrics registers its
// own, and lists the metric families a collector describes (Names, for
// the metric name checks of dashboards and docs). It holds no collector
// and imports no kernelet package.
package promreg
