// Package krew holds hactl's krew packaging: plugin.yaml.tmpl, rendered by
// hack/dist.sh (make dist) into dist/plugin.yaml with the real sha256 of
// every release archive, and copied to the top-level plugin.yaml by make
// manifest. Its test builds the archives and checks that the committed
// plugin.yaml is exactly what they render (the archives are
// reproducible), that the linux/amd64 release is within its size bounds,
// and that krew's own validate-krew-manifest installs each platform from
// them, served on loopback.
package krew
