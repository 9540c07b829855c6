// Package docs holds kernelet's reference pages (Markdown; the README at
// the repository's root is the first page and links every one of them)
// and the tests that keep the README a first page, every relative link of
// the README and these pages resolving, anchors included, and the feature
// gate table of features.md equal to agent/config's decisions. It has no
// code.
package docs
