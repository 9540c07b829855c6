// Package eviction owns kernelet's node-pressure eviction: the signals it
// observes, the thresholds it compares them with, the ranking of pods, the
// admission of new pods under pressure, and the manager that decides.
//
// Today it holds the thresholds: ParseThresholds turns the KubeletConfiguration
// eviction maps (evictionHard, evictionSoft, evictionSoftGracePeriod,
// evictionMinimumReclaim) into typed Threshold values, reporting every bad
// entry by its field path.
//
// Decisions here are pure functions over plain values. The package must not
// read files, call the runtime or kill anything itself: stats come in as
// values and pods are killed through a function handed to the manager.
package eviction
