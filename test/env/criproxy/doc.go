// Package criproxy is a CRI proxy for kernelet's tests and benchmarks: a
// gRPC server on a unix socket that forwards every RuntimeService and
// ImageService call (unary and streaming) to an upstream CRI socket, byte
// for byte, and on the way records each call (method, arrival time,
// decoded request) and runs an optional hook that can delay a call or fail
// it with a gRPC status. Agents under test (kernelet, the real kubelet)
// point their runtime endpoint at Proxy.Endpoint; the test reads Calls or
// subscribes with Watch to see what the agent asked the runtime and when,
// and sets delays or errors per method (SetDelay, SetError) to simulate a
// slow or failing runtime.
//
// The proxy does not interpret CRI: it relays raw protobuf frames, so it
// follows any cri-api version the upstream speaks; requests are decoded
// only for the record, through the protobuf registry of
// k8s.io/cri-api/pkg/apis/runtime/v1.
//
// For tests and bench/ only; kernelet never imports it.
package criproxy
