// Package status groups what the agent reports to the API server, one
// sub-package per concern:
//
//   - status/node: the Node — registration or adoption, capacity and
//     allocatable, addresses, conditions, node info, images — PATCHed when
//     it changes or every nodeStatusReportFrequency, and the Lease
//     heartbeat in kube-node-lease;
//   - status/pods: the pod status manager (strategic merge patches with a
//     UID precondition, terminal phases kept, final deletion of pods the
//     API server deletes) and the mirror pods of static pods;
//   - status/events: the event recorder (client-go's broadcaster).
//
// Each keeps its decisions pure (functions over values) apart from the
// loops that talk to the API server through client-go clients and listers
// handed to it. Nothing here lists or watches by itself, and nothing here
// imports the agent.
package status
