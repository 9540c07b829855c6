// Package podsetup derives what the pod side needs from the configuration
// and the node before it runs a pod: the node's capacity (CPUs, MemTotal),
// its allocatable as the Node's status.allocatable says it (so admission
// and the Node agree to the byte), the QoS cgroup hierarchy's settings
// (kubepods limited to capacity − reserved) and the options of every pod
// sync (sandbox and container configs). Pure functions of values, except
// NodeCapacity, which reads the node through package cgroups.
package podsetup
