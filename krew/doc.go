// Package krew holds hactl's krew packaging: plugin.yaml.tmpl, rendered by
// hack/dist.sh (make dist) into dist/plugin.yaml with the real sha256 of
// every release archive, and copied to the top-level plugin.yaml by make
// manifest. Its test builds this machine's archive and checks that the
// committed plugin.yaml is what make dist renders (outside the platform
// list, and this platform's entry to the byte: the archives are
// reproducible), that every release platform has an entry, that the
// linux/amd64 release is within its size bounds, and that krew's own
// validate-krew-manifest installs the archive, served on loopback. The
// other platforms are cross-built by make dist and make manifest.
package krew
