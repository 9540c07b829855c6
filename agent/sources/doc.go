// Package sources turns the places pods come from into one ordered stream of
// pod updates for the agent.
//
// Two static sources live here: a manifest directory (kubelet's
// staticPodPath) watched with inotify and rescanned every
// fileCheckFrequency, and an HTTP URL (staticPodURL) fetched every
// httpCheckFrequency with the configured headers. A third, APISource, reads
// the pods the API server binds to this node from a pod informer its owner
// builds and runs (agent/cluster, over NodePodsSelector), leaving mirror
// pods out. Each sends the full set of its pods (an OpSet Update) whenever
// that set changes; Start runs the static sources from the
// KubeletConfiguration (OptionsFromKubelet) and any others given. A Merger
// keeps the last set of every source, diffs each new set against it, and
// emits the changes as OpRemove, OpAdd, OpUpdate, OpDelete and OpReconcile
// updates, pods sorted by full name (name_namespace) within each.
//
// Static pods are defaulted the way kubelet defaults them: namespace
// "default", the name suffixed with "-<node name>", spec.nodeName set, phase
// Pending, a toleration of every NoExecute taint (file pods), and a UID that
// is a hash of the source identity (file path or URL), the node name and the
// pod as decoded (canonical JSON) unless the manifest sets metadata.uid. The
// same manifest at the same place keeps its UID across agent restarts; any
// change to it gives a new UID, and a new UID under the same name is the old
// pod removed and a new one added (kubelet keys pods by UID). The UID is
// also the kubernetes.io/config.hash annotation.
//
// Bad input never takes good pods down. A manifest that cannot be used
// (unparsable, wrong kind, invalid fields, empty) is reported as a Problem
// naming the file or URL and the document, and the last good version of that
// file's pods is kept until the file is fixed or deleted: a half-written or
// mistyped manifest must not kill a running static pod. Kubelet drops such a
// file's pods instead; kernelet deliberately does not. Every other file of
// the directory is unaffected. The HTTP source works the same way with the
// whole response as its one "file".
//
// Directory rules (as kubelet): every non-hidden regular file (symlinks
// followed) is a manifest whatever its extension; hidden files, directories
// and other file types are skipped and logged once. Unlike kubelet, editor
// backups ("name~") are skipped too. A change is read at once when a file is
// closed after writing or renamed into the directory, other changes
// (removals, writes still open) after a 100 ms debounce. A file may hold
// several YAML documents separated by "---", a JSON Pod, or a v1 PodList. A
// missing directory is an empty set, logged once and checked again every
// period.
//
// The package must not talk to the container runtime or the API server (the
// API source only reads an informer handed to it), and must not decide what
// to do with a pod: it only says which pods the sources want.
package sources
