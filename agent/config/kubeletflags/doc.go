// Package kubeletflags is kubelet's command line as kernelet takes it:
// every flag of kubelet v1.37.2 (table.go, generated from the Kubernetes
// sources by hack/kubeletflags: make kubeletflags), and what kernelet does
// with each (kernelet.go).
//
// A flag that sets a KubeletConfiguration field (kubelet marks most of
// them deprecated, and pflag prints kubelet's deprecation message when one
// is used) is bound to the field and becomes a config.Override: the value
// then goes through the same validation as in the file, so a value
// kernelet does not act on is refused naming the field. A flag that is not
// a configuration field is either defined by the command (cmd/kernelet)
// and acted on there, or refused when given with a value that asks for
// something (Refusals): "kernelet does not support --<flag>". No flag of
// kubelet's is unknown, none is silently ignored.
//
// Bind is the only entry point; it parses nothing itself and touches
// nothing on the node.
package kubeletflags
