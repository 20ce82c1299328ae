// Package kwok runs kwok as the sandbox's node agent: it loads kwok's CRDs
// and Stages from the pinned bin dir (testbins copies them next to the
// binary), makes the pod Stages skip pods labelled hactl.dev/engine (the
// member runner owns those pods' status and deletion), installs them,
// starts the kwok controller on loopback with a serving certificate the
// API server trusts, and creates the fake nodes it manages.
//
// kwok also serves the kubelet API for those nodes: `kubectl
// port-forward` and `kubectl logs` on a sandbox pod reach whatever the
// pod's PortForward and Logs objects name.
package kwok
