// Package controlplane runs a real Kubernetes control plane on loopback:
// a one-member etcd, kube-apiserver with client-certificate authentication,
// service-account keys and Node,RBAC authorization, and optionally
// kube-controller-manager and kube-scheduler, all from the pinned binaries
// (see internal/testbins) on free 127.0.0.1 ports.
//
// Tests use it (through internal/testenv) to prove what a fake cannot:
// resourceVersion and UID preconditions, RBAC denials, real controllers.
// The sandbox reuses it as the cluster that kwok and the etcd members
// plug into.
//
// Every certificate is generated here with crypto/x509 by a CA that lives
// in Dir/pki. Processes run in their own process groups, log to
// Dir/logs/<component>.log and are recorded in Dir/pids so KillRecorded
// can clean up after a crash.
package controlplane
