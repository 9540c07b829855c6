// Package runtimeconn is the agent's connection to the container runtime
// (CRI): dialled until the runtime answers Info (backing off from 1 s to
// 10 s, the first failure and every 10th after it logged), the last error
// while it does not, the `runtime` health check (Ready within 2 s), and a
// channel closed once connected, for the parts that wait for it.
package runtimeconn
