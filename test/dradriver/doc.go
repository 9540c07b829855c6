// Package dradriver is the tests' DRA driver: a kubelet plugin built on
// k8s.io/dynamic-resource-allocation's kubeletplugin helper (the library
// DRA drivers use), which registers through the node's plugins_registry,
// publishes one ResourceSlice of the node with Devices devices
// ("dev-0", ...), and prepares a claim by writing a CDI spec that gives
// the containers of its devices the environment variables
// DRA_CLAIM=<namespace>/<name> and DRA_DEVICE_<N>=<device>. Unprepare
// removes the spec. Its health service reports every device Healthy
// ("test device", valid for an hour) once per stream. Every call is appended to <StateDir>/calls.log
// ("Prepare <namespace>/<name>", "Unprepare <namespace>/<name>") for the
// tests to assert the order.
package dradriver
