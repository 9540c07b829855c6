// Package volume owns the pod volumes on the node: it sets them up under
// <pods dir>/<uid>/volumes/<plugin>/<name> before a pod's containers are
// created (emptyDir on disk or tmpfs, hostPath with its type checks,
// configMap, secret, downwardAPI and projected volumes written with
// kubelet's atomic writer layout, service account tokens from the
// TokenRequest API; fsGroup ownership as kubelet's SetVolumeOwnership),
// prepares subPath mounts (opened without following symlinks from the
// volume root and bind-mounted under <uid>/volume-subpaths), keeps the
// API-backed ones up to date while the pod runs (object changes, token
// rotation), tears them down after the containers are gone (subPath bind
// mounts first; the kubernetes.io~csi directory is agent/volumemanager's and
// left alone) and removes the leftovers of pods no one wants any more
// (after a restart). DiskUsage measures a directory tree as `du -x` does
// (bounded, no symlinks followed) and Device tells a path's filesystem,
// for agent/pressure's measurement of the pods' local storage.
//
// The API objects come through the Objects and Tokens interfaces (package
// apiobjects's ObjectManager and TokenManager implement them over
// client-go; nil in standalone mode, where only emptyDir, hostPath and
// downwardAPI volumes work); NewAPIManager builds a Manager with them.
// When a token is refreshed is apiobjects's decision. What a volume's
// files should be (payloads, modes, ownership) is computed by pure
// functions; the writes and mounts sit beside them.
// It must not talk to the container runtime.
package volume
