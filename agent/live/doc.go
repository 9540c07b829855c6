// Package live is the agent's live view for the dashboard and `kernelet
// top`: the event kinds operators watch (evictions, OOM kills, node
// condition changes), a Hub that broadcasts them to subscribers without
// ever blocking a publisher (bounded per-subscriber buffers; a subscriber
// that falls behind is dropped, not waited for) and keeps the last events
// for late subscribers, and the Snapshot of node and pod memory pressure
// with its pure conversion from cgroup and eviction values. A View holds
// the agent's hub, the OOM kills seen in pod statuses and the last
// snapshot, read again at most every CacheFor.
//
// It reads nothing itself: the agent hands it values (BuildSnapshot's
// inputs, through View's read function, come from the cgroups Reader;
// the pod statuses OOMTracker looks at come from the pod workers), and
// agent/server/dashboard serves the results over HTTP. It must not
// import the server, the runtime or any terminal library.
package live
