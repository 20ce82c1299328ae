// Package krew holds hactl's krew packaging: plugin.yaml.tmpl, rendered by
// hack/dist.sh (make dist) into dist/plugin.yaml with the real sha256 of
// every release archive. Its test builds the archives, serves them on
// loopback and has krew's own validate-krew-manifest install each
// platform from them.
package krew
