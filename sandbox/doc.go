// Package sandbox runs hactl's sandbox: a local, real control plane with
// real etcd members, for the demo and the end-to-end tests. It is hactl's
// embedded default: `go run ./cmd/hactl-sandbox up` takes a fresh clone
// to live HA clusters with nothing installed by hand (the pinned binaries
// are built by hack/testbins.sh on first use).
//
// # What runs
//
// Everything binds to loopback only:
//
//   - the control plane (sandbox/controlplane): etcd, kube-apiserver,
//     kube-controller-manager (the real StatefulSet, PV binder,
//     garbage-collector, disruption and EndpointSlice controllers) and
//     kube-scheduler, on free ports of 127.0.0.1;
//   - kwok (sandbox/kwok) managing three fake nodes node-1…node-3, serving
//     their kubelet API (port-forward, logs) on 127.0.0.1;
//   - versitygw, an S3 store for seed generations, with bucket
//     "hactl-seeds" and root credentials generated at start;
//   - a static volume provisioner (sandbox/volumes) behind the default
//     StorageClass "hactl-sandbox";
//   - the member runner (sandbox/runner): every pod labelled
//     hactl.dev/engine runs as a real etcd process;
//   - the scenarios (sandbox/scenario): clusters set up through the API
//     and fault injection only.
//
// # Processes: up, the supervisor, down
//
// Start (the CLI's `up`) writes DIR/config.json and starts a supervisor —
// the calling program re-executed as `<program> serve --dir DIR` — in a
// session of its own, logging to DIR/logs/supervisor.log, and polls
// DIR/state.json until the supervisor reports every scenario set up (or
// a failure, in which case everything is stopped again and the log tail
// is returned). Start then returns while the sandbox keeps running. The
// program must route `serve` to Serve: cmd/hactl-sandbox does, and this
// package's tests do in TestMain.
//
// The supervisor (Serve) records itself in DIR/supervisor.json (pid and
// kernel start time) and serves a control API on a free 127.0.0.1 port,
// guarded by a random bearer token; address and token are in
// DIR/control.json (mode 0600). `break` and Sandbox.Break/Members go
// through it.
//
// Down stops a sandbox also after a crash of `up` or of the supervisor: it
// sends SIGTERM to the supervisor (which stops members, kwok, versitygw
// and the control plane, in that order) and waits up to 30 s; then it
// SIGKILLs whatever is left of the supervisor's session (every process it
// started, and every process those started, carries its session id even
// when orphaned) and every process recorded in a pid file under DIR
// (pid plus start time, so a reused pid is never hit). Every child also
// gets SIGKILL from the kernel when the supervisor dies (parent-death
// signal). Down then removes DIR, which must hold the .hactl-sandbox
// marker (Down and Start refuse to touch a directory without it);
// --keep keeps it. A Start on a directory holding a dead sandbox cleans it
// up first; a Start on a running one fails with ErrRunning.
//
// The default DIR is $HACTL_SANDBOX_DIR, else <user cache dir>/hactl/sandbox
// (~/.cache/hactl/sandbox on Linux). Layout: config.json, state.json,
// supervisor.json, control.json (0600), s3.json (0600), kubeconfig (0600,
// admin), logs/, controlplane/, kwok/, versitygw/, s3/ (bucket data),
// runner/ (member logs in CRI format, pid files, pod homes), volumes/
// (one directory per PVC).
//
// # Addresses
//
// Each sandbox claims an address block b (1…254) with a lock file in
// $TMPDIR/hactl-sandbox-blocks-<uid> held for the supervisor's life, so
// two sandboxes (the demo and a test run) never share addresses. Member n
// of the sandbox serves clients at 127.b.1.n:2379 and advertises
// 127.b.1.n:2380 for peers, where the runner's peer proxy forwards to its
// real peer listener at 127.b.2.n:2380; the pod's status reports pod IP
// 10.244.b.n, which EndpointSlices publish (they refuse loopback) and
// nothing ever dials. Addresses are kept per namespace/pod name, like DNS
// names, so a recreated pod gets the same ones.
//
// # Faults
//
// See fault.Kind: stop, pause (SIGSTOP), resume, kill, wipe (empty the
// data dir and restart with the pod's flags), rebootstrap (wipe and
// restart with chosen etcd flags; by default the seed 000 ones, a new
// one-member cluster of the member itself; flags may use pod DNS names,
// which are substituted), fill-quota (write until NOSPACE), isolate and
// heal (cut or restore the member's raft traffic both ways; clients still
// reach it), colocate (pin the member's StatefulSet to its node; when the
// pods carry required anti-affinity, which no rolling update can get past,
// all pods are recreated at once).
//
// # Scenarios
//
// Scenario names, shapes and the reason codes `kubectl hactl status`
// reports for them are listed by `hactl-sandbox scenarios` and in
// sandbox/scenario. With no --scenario, Start sets up scenario.Demo in
// namespace hactl-demo.
//
// # Where the sandbox deliberately differs from a cluster
//
//   - No images: containers run the host's pinned etcd/etcdctl (first on
//     PATH) and /bin/sh. An absolute command path missing on the host
//     (/usr/local/bin/etcd) is looked up by base name; an image without a
//     command runs its known entrypoint (only etcd images are known).
//   - Only addresses and volume mount paths are substituted in args, env
//     and scripts: pod DNS names, the pod IP, 0.0.0.0, [::], 127.0.0.1 and
//     localhost become the member's address; the value of
//     --listen-peer-urls (or ETCD_LISTEN_PEER_URLS) becomes its hidden peer
//     address; mount paths become the volume's host directory.
//     Service DNS names (other than a pod's own) and service-link
//     environment variables are not provided.
//   - The readiness probe (HTTP, TCP or exec) is honoured with its
//     period and thresholds; liveness and startup probes are not enforced
//     (a paused member stays paused). Init containers are not run.
//   - Restart back-off is the kubelet's, scaled down: the first restart is
//     immediate, then 2 s doubling to 30 s, reset after a minute of
//     running.
//   - PersistentVolumes are hostPath directories with no node affinity:
//     a member may move between fake nodes and keep its data.
package sandbox
