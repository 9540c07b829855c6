// Package certificates is the node's TLS bootstrap and certificate
// rotation, with kubelet's behaviour and files:
//
//   - Bootstrap: when --kubeconfig is missing or its client certificate
//     does not load or has expired, a CertificateSigningRequest for
//     kubernetes.io/kube-apiserver-client-kubelet (CN system:node:<name>,
//     O system:nodes) is sent with the credentials of
//     --bootstrap-kubeconfig; once issued (bounded by BootstrapTimeout)
//     the certificate and key are stored in --cert-dir as
//     kubelet-client-<date>.pem with the kubelet-client-current.pem
//     symlink, and the kubeconfig is written pointing at that symlink.
//   - ClientRotation (rotateCertificates): a Rotator renews the client
//     certificate at a jittered 70–90 % of its lifetime (RotationDeadline)
//     and the new one is swapped into every API client by the rotating
//     transport: new requests use a transport with the new certificate,
//     the old one's idle connections are closed and its long-running
//     requests (watches) finish on their own, so no watch is cut. Expired
//     for ExitAfterExpiry and refused by the API server, it ends the
//     agent (kubelet's exit, for a new bootstrap at the next start).
//   - NewServingRotator (serverTLSBootstrap): the serving certificate from
//     kubernetes.io/kubelet-serving CSRs naming the node's hostname and
//     addresses, renewed the same way (and at once when an address
//     changes); the kubelet API's TLS listener takes Current at each
//     handshake.
//
// kubelet does this with client-go's certificate manager
// (k8s.io/client-go/util/certificate and its csr package). Both take
// client-go's full clientset (k8s.io/client-go/kubernetes), which
// cmd/kernelet's footprint guard keeps out: linked, it made the binary
// 59.4 MB instead of 44.3 MB and the idle agent's RSS 39–40 MiB instead
// of 30–31 MiB, on every node whether it rotates or not. So the CSR's
// create-and-watch, the dated file store and the rotation loop are this
// package's own, over internal/clientset's CertificateSigningRequests,
// with client-go's keyutil and the transport helpers.
//
// The decisions (is a kubeconfig still usable at a time, the kubeconfig
// written, the CSR's name and usages, the serving names, the rotation
// deadline, when to wake, whether a certificate matches its template, is
// a CSR issued) are pure functions apart from the side effects.
package certificates
