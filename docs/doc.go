// Package docs holds kernelet's reference pages (Markdown; the README at
// the repository's root is the first page and links every one of them)
// and the test that keeps the README a first page and every relative
// link of the README and these pages resolving, anchors included. It has
// no code.
package docs
