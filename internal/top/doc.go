// Package top is `kernelet top`: a terminal view of the node's memory
// pressure and its pods (working set against request and limit, PSI, OOM
// kills), refreshed every second from the agent's dashboard event stream
// (/dashboard/api/events), sortable by key, fitting 80×24.
//
// The view is a pure function of the state (View); the terminal loop is
// bubbletea's, the stream reader (Stream) plain HTTP. Only `kernelet top`
// imports this package: the terminal libraries stay out of every other
// command's code paths (their package initialisers still run in the one
// binary; see cmd/kernelet's TestTopInitCost).
package top
