// Package prober runs the liveness, readiness and startup probes of pod
// containers, as kubelet does: one worker per probe of a running container
// (exec through the CRI's ExecSync, httpGet, tcpSocket, grpc), thresholds,
// initial delay and period, the startup probe gating the other two. It
// keeps the latest result of each probe by container ID and tells the pod
// worker (Config.OnChange) when one changes; the agent reads Started, Ready
// and Unhealthy when it syncs the pod.
//
// The pure parts — the worker's next step, thresholds, who is started and
// ready, the messages of events — live in decide.go; the handlers (network
// and CRI calls) in handlers.go and grpc.go; the workers and the result
// store in manager.go and worker.go; prober_probe_* metrics in metrics.go.
//
// It never kills nor restarts a container: the runtime Manager does, when
// the agent hands it Unhealthy.
package prober
