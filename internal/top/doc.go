// Package top is `kernelet top`: a terminal view of the node's memory
// pressure and its pods (working set against request and limit, PSI, OOM
// kills), refreshed every second from the agent's dashboard event stream
// (/dashboard/api/events), sortable by key, fitting 80×24.
//
// The view is a pure function of the state (View); the terminal loop is
// bubbletea's, the stream reader (Stream) plain HTTP. Only `kernelet top`
// imports this package: the terminal libraries stay out of the agent and
// every other command's code paths (TestAgentLinksNoTerminalUI); their
// package initialisers still run in the one binary, about 0.3 ms and
// 100 KB of heap at start (GODEBUG=inittrace=1).
package top
