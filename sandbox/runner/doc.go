// Package runner is the sandbox's kubelet for HA cluster members: for each
// pod labelled hactl.dev/engine (scheduled to one of kwok's fake nodes),
// each control-plane static pod's mirror pod (annotation
// kubernetes.io/config.mirror, label tier=control-plane: kubeadm's etcd),
// and each pod controlled by an EtcdMember of etcd-operator.cozystack.io
// (playing the kubelet for the cozystack etcd-operator's pods, which
// carry nothing of hactl's: found among the pods labelled
// etcd-operator.cozystack.io/cluster by their controller owner), and
// each Bitnami-style etcd member (labelled app.kubernetes.io/name=etcd,
// a container setting ETCD_ON_K8S=yes, nothing of hactl's), and each of
// etcd-druid's member pods (labelled app.kubernetes.io/managed-by=
// etcd-druid, controlled by a StatefulSet an Etcd of druid.gardener.cloud
// controls; containers of the etcd-wrapper and etcdbrctl images run the
// stand-ins of package druidstandin, Options.StandIn, with a
// druidstandin.Context in their environment), and each of the Zalando
// postgres-operator's member pods (labelled application=spilo, a
// container of a Spilo image without a command, which runs the Spilo
// entrypoint stand-in of package spilostandin with the pod's reported IP
// in spilostandin.PodIPEnv), and each of Crunchy PGO v5's instance pods
// (labelled postgres-operator.crunchydata.com/data=postgres with an
// instance label, a database container with a command: see IsPGOMember),
// it runs the pod's containers as real host processes — the container's own
// command, args and environment, with the downward API and $(VAR)
// references resolved, and only addresses substituted so the member
// listens on its own loopback address (127.x.1.n) with the standard ports —
// with its data in the directory of the pod's PVC.
//
// The runner owns those pods' status (kwok's stages skip them): phase,
// Ready/ContainersReady from the container's real readiness probe,
// containerStatuses with restart counts, CrashLoopBackOff and the last
// termination, and a non-loopback podIP (10.244.x.n) so EndpointSlices
// publish the pod; that IP is never dialled. It registers a kwok
// PortForward per pod (same name and namespace) so `kubectl port-forward`
// reaches the real process through the API server, and a kwok Logs object
// so `kubectl logs` reads the container's output.
//
// Deleting a pod stops its processes (SIGTERM, SIGKILL after the grace
// period) and the runner then finishes the delete, as a kubelet does.
//
// The pod's restartPolicy is honoured: Always (members) restarts every
// exit with back-off; OnFailure only a non-zero one; Never runs the
// container once (hactl's one-shot restore pods). A container that is not
// restarted stays terminated (exit code, reason Completed or Error, and,
// with terminationMessagePolicy FallbackToLogsOnError and a failure, the
// last 80 lines / 2048 bytes of its log as message), and once every
// container is, the pod is Succeeded (all exited 0) or Failed. Faults do
// not bring such a container back.
//
// Containers of hactl's agent image run hactl's own binary: the runner
// links Options.AgentPath as kubectl-hactl in a directory on their PATH,
// right after the pinned binaries. Object store URLs (s3://, gs://,
// azblob://) and the store variables (AWS_*, AZURE_STORAGE_*,
// GOOGLE_APPLICATION_CREDENTIALS_JSON) are passed as written — never
// address-translated — so a store at the sandbox's versitygw
// (s3://...?endpoint=http://127.0.0.1:PORT), or an emulator on this host's
// loopback, is reached as written, with credentials from a Secret through
// env or envFrom.
//
// A container's securityContext runAsUser/runAsGroup (the container's
// over the pod's; fsGroup and supplementalGroups as extra groups) is
// honoured when the runner runs as root: the process runs as that user,
// and the directories it writes (its PVCs' and emptyDirs' host
// directories, its home and TMPDIR) are made the user's, as a kubelet
// makes volumes writable. When the user cannot search its way to them
// (the sandbox under /root, mode 0700), the process keeps
// CAP_DAC_READ_SEARCH as an ambient capability. A runner that is not root
// runs every container as itself.
//
// Each container gets its own TMPDIR (a directory of the pod's) and,
// unless the pod sets automountServiceAccountToken: false, KUBECONFIG:
// a kubeconfig whose context (KubeContext) holds a token of the pod's
// ServiceAccount from the TokenRequest API, bound to the pod, so the
// container acts with the ServiceAccount's RBAC. A container setting
// TMPDIR or KUBECONFIG itself keeps its own.
//
// A container is its whole process tree, as with a cgroup: processes
// that leave its session (PostgreSQL's postmaster, started by Patroni
// through a short-lived process, and every postmaster child call setsid)
// are found — as descendants, or as orphans the runner adopts as child
// subreaper, by the HACTL_SANDBOX_CONTAINER marker in their environment —
// and recorded in pid files of their own (pid and start time), so that
// stop, kill and pause reach them, they end with the container, and the
// sandbox's `down` kills them even after the supervisor was SIGKILLed.
// Faults that act on part of a container: freeze-patroni (the main
// process only), stall-replay and stall-receive (a PostgreSQL replica's
// startup or walreceiver process), crash-postgres (the postmaster) and
// promote (pg_ctl promote, run as the container's user: see Exec).
//
// kwok's port-forward reaches a member through the runner's forward proxy
// (127.x.3.n, relaying to the member's address while the container
// runs): kwok never passes a server's close on to the client, so the
// proxy gives HTTP answers that end with the connection (Patroni's
// HTTP/1.0 REST API) a Content-Length.
//
// A hostPath volume /p of a pod on node N is Options.NodeDir(N)/p
// (created for DirectoryOrCreate and an unset type, checked for the other
// types; a missing one holds the pod in ContainerCreating). A hostNetwork
// pod reports its member address as pod IP and host IP (it stands for the
// node's IP, which such a pod's flags name), its PortForward also covers
// the ports of its containers' --listen-*-urls (they declare none), a
// wipe empties the hostPath directory holding its --data-dir, and a
// mirror pod gets no ServiceAccount kubeconfig (static pods have none).
//
// A pod's DNS names are those of a StatefulSet pod under its governing
// Service (<pod>.<service>[.<ns>[.svc[.cluster.local]]]) and, for a pod
// the runner runs that sets spec.hostname and spec.subdomain (the
// cozystack etcd-operator's members), <hostname>.<subdomain>[...]: in
// flags and environment they are rewritten to the member's address.
//
// Each member listens for peers on a second, hidden address (127.x.2.n);
// the runner's peer proxy forwards the member's advertised peer address to
// it and can cut a member off from its peers (fault.Isolate) while clients
// still reach it. With TLS peers the proxy cannot read the sender's
// X-PeerURLs: it finds the member whose process holds the dialling socket
// (/proc/net/tcp and /proc/<pid>/fd) when a member is isolated.
package runner
