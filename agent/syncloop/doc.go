// Package syncloop tells whether the agent's pod loops still make
// progress: kubelet's `syncloop` health check.
//
// kubelet stores the time at each iteration of its sync loop and fails
// the check ("sync Loop took longer than expected") once that time is
// older than max(2 × syncFrequency, 5 min). kernelet has no such
// single loop; it watches its own two:
//
//   - loops that wait for work (the dispatch of source updates to the pod
//     workers) are Busy while they handle one piece of work: the check
//     fails when one is busy for longer than the limit — waiting for work
//     is not a lack of progress;
//   - periodic loops (housekeeping, every 2 s) report each completed pass
//     (the func Periodic returns): the check fails when the last one, or the registration
//     before the first, is older than the limit.
//
// A loop blocked on a lock (a deadlock between managers) thus fails the
// check, which names the loop and how long; Run logs each change of the
// verdict. The decision (check) is pure; the clock is injected.
package syncloop
