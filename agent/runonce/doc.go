// Package runonce is kubelet's --runonce for the agent: how each pod of
// a run-once ended (Outcome: succeeded, or running with every container
// ready; failed, or what it still waits for), the wait until every pod is
// done or the time is up (Wait; a pod none of whose containers restarts
// Always is waited for until it finishes, ExpectedToFinish), the termination of every pod at the end
// (Terminate: the sources stopped first, so nothing restarts them) and
// the removal of the QoS hierarchy the run made (RemoveCgroup of kubepods
// and its descendants, retried while the last processes exit). The
// agent's RunOnce runs the pod lifecycle and hands it the pod workers and
// sources through the small Workers and Sources interfaces; it runs no
// pod and talks to no runtime itself.
package runonce
