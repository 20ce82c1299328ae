// Package volumes is the sandbox's storage: a default StorageClass and a
// tiny static provisioner behind it. For each claim of that class it
// creates a hostPath PersistentVolume under <dir>/<namespace>/<claim>-<uid>
// with a claimRef to the claim, so the real kube-controller-manager binds
// the two; when the claim is deleted it removes the directory and the
// volume. A claim's directory therefore lives exactly as long as the claim:
// a new claim, even with the same name, starts empty.
package volumes
