// Package buildinfo says what runs and where, as constant series of the
// agent's /metrics (Register): kernelet's own kernelet_build_info{version,
// revision,goversion}, kubelet's kubernetes_build_info (component-base's
// labels: major, minor, git_version, git_commit, git_tree_state,
// build_date, go_version, compiler, platform; git_version is the
// kubeletVersion the node reports, git_commit, git_tree_state and
// build_date the binary's VCS stamp) and kubelet's kubelet_node_name{node}.
// Revision and GoVersion read the binary's embedded build information. It
// holds no state and reads nothing but that.
package buildinfo
