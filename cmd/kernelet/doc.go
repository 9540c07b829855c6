// Command kernelet is a Linux node agent: it runs the pods meant for this
// node through the CRI and takes its view of resources straight from the
// kernel. See `kernelet help` and docs/commands.md.
//
// Subcommands, one file each: run (the node daemon; kubelet is run with
// kubelet's defaults, and a binary named kubelet runs it: CommandLine),
// trace
// (oom|reclaim|exit|cgroup: kernel events resolved to pods), status (asks
// a running agent), top (the terminal view of internal/top), config
// validate and version. Flags are spf13/pflag's, as kubelet's and
// kubectl's; run takes kubelet's whole command line (run_flags.go defines
// the flags it acts on here, agent/config/kubeletflags binds the rest onto
// the configuration or refuses them by name). This package owns only the
// command line: flags and the configuration files are parsed and
// validated (agent/config)
// into an agent.Options, and `run` hands it to agent.New; it also sets the
// process-wide defaults of `run` (DefaultGOGC) and applies the logging
// configuration (component-base's logs API, text or json). It must not grow agent
// logic: what the agent does belongs to agent/ and its sub-packages.
// TestFootprintDependencies keeps the full client-go clientset and other
// heavy packages out of the binary.
package main
