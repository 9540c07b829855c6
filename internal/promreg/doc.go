// Package promreg registers a package's collectors with the registry of
// the endpoint that serves them (Register: in order, stopping at the
// first error), so that each package that produces metrics registers its
// own. It holds no collector and imports no kernelet package.
package promreg
