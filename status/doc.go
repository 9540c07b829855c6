// Package status reports to the API server: node status (capacity and
// allocatable, addresses, conditions, info, images), the Lease heartbeat,
// the pod status manager (patch with retry, finalize deletion) and the event
// recorder.
//
// Nothing is implemented here yet: it arrives with the API server issue.
package status
