// Package gctune sets the Go garbage collector's target (GOGC) of the
// agent by the node's pod churn: a lower percentage while the runtime is
// quiet, so the agent's resident memory stays small on a node at rest, a
// higher one while pods are created, started, stopped or removed, when
// the agent allocates most and a collection every half heap growth costs
// CPU the node needs for the pods. The activity is any counter that grows
// with the churn (the CRI metrics' mutating operations); Percent is the
// pure decision and Tuner.Run applies it. An operator's $GOGC turns the
// tuning off (cmd/kernelet).
package gctune
