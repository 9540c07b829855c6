// Package apiobjects owns the API objects the node reads for its pods,
// over client-go: the configMaps and secrets pods reference (ObjectManager,
// with kubelet's three configMapAndSecretChangeDetectionStrategy values:
// Watch — one watch per referenced object, field-selected by name, started
// by the first pod that references it and stopped with the last, immutable
// objects kept and not watched —, Cache and Get; PodReferences lists what a
// pod references) and the service account tokens bound to pods
// (TokenManager, through the TokenRequest API, refreshed per NeedsRefresh).
//
// It serves package volume (configMap, secret and projected volumes,
// through its Objects, PodObjects and Tokens interfaces) and package
// runtime (env and envFrom, through EnvObjects); neither depends on
// client-go for that. It writes nothing to disk.
package apiobjects
