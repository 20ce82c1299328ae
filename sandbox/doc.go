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
//     hactl.dev/engine runs as real processes (etcd, or Patroni with
//     PostgreSQL under it);
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
// (pid plus start time, so a reused pid is never hit), with every
// descendant of those (the runner records the processes that leave their
// container's session, such as PostgreSQL's postmaster; their children
// left it too). Pid files inside volume directories (DIR/volumes/, a
// pod's volumes/) are the members' own (postmaster.pid) and never read.
// Every child also
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
// real peer listener at 127.b.2.n:2380 (a Patroni member: REST API at
// 127.b.1.n:8008, PostgreSQL at 127.b.1.n:5432); kwok's port-forward
// reaches a member through the runner's forward proxy at 127.b.3.n, which
// relays each declared port while the container runs and gives
// close-delimited HTTP answers (Patroni's) a Content-Length, since kwok
// never passes a server's close on to the client; the pod's status reports pod IP
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
// all pods are recreated at once). Pause, kill and stop reach every
// process of the member, PostgreSQL's too. For Patroni members:
// freeze-patroni (SIGSTOP Patroni only; PostgreSQL runs on),
// stall-replay and stall-receive (SIGSTOP a replica's startup or
// walreceiver process), crash-postgres (SIGKILL the postmaster), promote
// (pg_ctl promote as the pod's user); resume undoes the freezes.
//
// # Scenarios
//
// Scenario names, shapes and the reason codes `kubectl hactl status`
// reports for them are listed by `hactl-sandbox scenarios` and in
// sandbox/scenario. With no --scenario, Start sets up scenario.Demo in
// namespace hactl-demo. The kubeadm scenario's cluster is in kube-system
// (ClusterInfo.Namespace says so); break reaches its members as
// kube-system/etcd-node-N.
//
// # Where the sandbox deliberately differs from a cluster
//
//   - No images: containers run the host's pinned etcd/etcdctl (first on
//     PATH), /bin/sh, and Patroni and PostgreSQL as installed on the host
//     (Debian's patroni and postgresql-15: /usr/bin/patroni,
//     /usr/lib/postgresql/15/bin). An absolute command path missing on the host
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
//   - runAsUser/runAsGroup are honoured only when the sandbox runs as
//     root (PostgreSQL refuses root; run unprivileged, everything runs as
//     the sandbox's user); such a process keeps CAP_DAC_READ_SEARCH when
//     the sandbox's directory is not searchable for its user (under
//     /root). Every container gets its own TMPDIR and, instead of a
//     mounted ServiceAccount token, KUBECONFIG with a token of its
//     ServiceAccount (context "hactl-sandbox"); no KUBERNETES_SERVICE_*
//     variables.
//   - `kubectl port-forward` goes through kwok, which ends a forwarded
//     connection only once both sides have closed: a server's close does
//     not reach the client (a kubelet passes it on). The runner's forward
//     proxy makes up for it for HTTP answers delimited by the close
//     (Patroni's REST API answers HTTP/1.0 without Content-Length) by
//     adding a Content-Length; any other protocol that ends a response by
//     closing would still hang a client that waits for EOF.
//   - PersistentVolumes are hostPath directories with no node affinity:
//     a member may move between fake nodes and keep its data.
//   - A pod's hostPath volume /p on node N is DIR/nodes/N/p (created for
//     DirectoryOrCreate or an unset type; other types must exist), so the
//     runner can play the kubelet for static pods: it runs the mirror
//     pods labelled tier=control-plane (kubeadm's etcd), and kwok's stages
//     skip every mirror pod (annotation kubernetes.io/config.mirror). A
//     hostNetwork pod's node IP is its member address (127.x.1.n): its
//     pod IP and host IP report it, and port-forwards reach the ports its
//     containers listen on (--listen-*-urls) as well as those they
//     declare. Over TLS peers (https peer URLs) the peer proxy tells a
//     connection's sender by the process holding its dialling socket
//     (/proc), so isolate works there too.
package sandbox
