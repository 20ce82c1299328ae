// Package scenario holds the sandbox's HA clusters: pod templates for the
// three etcd bootstrap shapes and for Patroni, written as a real chart
// would ship them, and the named scenarios that set a cluster up in a
// given state through the Kubernetes API and the sandbox's fault
// injection (and, for Patroni, its REST API and exec in a pod) only.
//
// Shapes (templates/*.yaml, rendered by Render):
//
//   - static-existing: etcd run directly; installed with
//     --initial-cluster-state=new and, once formed, upgraded to "existing"
//     (a rolling update), the documented practice.
//   - self-registering: a Bitnami-style entrypoint (ETCD_ON_K8S=yes): on
//     an empty data dir in a formed cluster it removes any member with its
//     peer URL, adds itself with `etcdctl member add` and starts
//     "existing"; with no cluster answering, it bootstraps.
//   - static-new: --initial-cluster-state=new hard-coded, as the upstream
//     etcd-on-Kubernetes guide and kamaji-etcd ship it (the seed 000
//     hazard).
//   - patroni: PostgreSQL under Patroni (the host's /usr/bin/patroni and
//     newest /usr/lib/postgresql/N, Debian's packages) with Patroni's
//     Kubernetes DCS on ConfigMaps (<name>-leader, -config, -sync): a
//     StatefulSet (Parallel, required anti-affinity, runAsUser the host's
//     postgres user), a ServiceAccount with a Role for the DCS, a Secret
//     with the credentials, a ConfigMap with patroni.yml (bootstrap.dcs
//     ttl 30, loop_wait 10, retry_timeout 10 (Patroni's defaults: a
//     loaded machine does not make the leader flap), maximum_lag_on_failover
//     1 MiB, use_pg_rewind, use_slots; basebackup checkpoint fast), the
//     primary's Service <name> (selector cluster-name, role=master), a
//     headless <name>-headless and a PodDisruptionBudget. Everything else
//     is in PATRONI_* variables; the runner gives the pods KUBECONFIG with
//     their ServiceAccount's token (context KubeContext).
//
// Every etcd cluster has a headless Service (<name>-headless, giving members
// their DNS names), a client Service (<name>-client) and, unless the
// scenario says otherwise, a PodDisruptionBudget (maxUnavailable 1); its
// StatefulSet, pods and PVCs carry hactl.dev/engine=etcd (except
// bitnami-auth's and bitnami-tls's, which carry nothing of hactl's). Templates use
// podManagementPolicy Parallel, as etcd charts do (members of a forming
// cluster are only Ready together).
//
// Scenarios (the cluster is named after the scenario; reason codes are
// what `kubectl hactl status` reports, checked against it):
//
//   - healthy: static-existing, 3 members on 3 nodes, PDB. None:
//     failover-ready.
//   - healthy-self-registering: the same with the self-registering shape.
//     None.
//   - no-pdb: healthy without a PodDisruptionBudget. pdb_missing.
//   - colocated: healthy with every member on node-1. members_colocated.
//   - crashloop: member 2's data dir wiped; with "existing" on an empty
//     dir etcd panics on every start (raft: tocommit out of range).
//     pod_crashlooping, member_unreachable (pod_not_ready may show too).
//   - seed-rebootstrap: static-new; member 0's data dir wiped and the
//     member restarted with the seed's flags (state new, an initial
//     cluster of itself): same member ID, its own new cluster ID, Ready.
//     cluster_id_split, bootstrap_flag_stale (leader_disagreement and
//     member_list_disagreement may show too). A plain wipe of a static-new
//     member whose --initial-cluster names all members fails loudly
//     instead ("member … has already been bootstrapped").
//   - lagging-learner: 3 voters plus a learner added with `member add
//     --learner` (the StatefulSet scaled to 4); once the learner has
//     caught up it is isolated from its peers (the runner's peer proxy)
//     and 2000 more entries are written: it still answers, 2000 entries
//     behind, and its readiness probe fails. learner_pending,
//     pod_not_ready (member_lagging or lag_unknown may show too). Its
//     voters run with --strict-reconfig-check=false so the learner can be
//     added at once instead of 5 s after the members connected.
//
// bitnami-auth (shape self-registering, not in Demo; bitnami.go): the
// cluster laid out as Bitnami's etcd chart lays it out with its default
// authentication (auth.rbac.create: true; Params.BitnamiAuth): the
// chart's labels only (nothing of hactl's), the client Service <name>,
// the Secret <name> (Opaque, BitnamiPasswordKey: a random password) read
// as ETCD_ROOT_PASSWORD through a secretKeyRef beside
// ALLOW_NONE_AUTHENTICATION=no, and the entrypoint's etcdctl calls and
// readiness probe made as root. Once formed, the scenario does in member
// 0 what Bitnami's entrypoint does on a first start (user add root, user
// grant-role root root, auth enable) and waits until every member refuses
// an anonymous client and answers root. None: failover-ready (hactl reads
// the password through the StatefulSet's secretKeyRef).
//
// bitnami-tls (shape self-registering, not in Demo; bitnami.go):
// bitnami-auth plus the chart's client TLS with client-certificate auth
// (auth.client.secureTransport, enableAuthentication, existingSecret
// <name>-client-certs; Params.ClientTLS): the Secret's cert.pem, key.pem
// and ca.crt (MintBitnamiCerts: the members' one key pair, serverAuth and
// clientAuth) mounted as the volume etcd-client-certs at
// BitnamiCertsDir, ETCD_CERT_FILE, ETCD_KEY_FILE, ETCD_CLIENT_CERT_AUTH
// and ETCD_TRUSTED_CA_FILE naming them, https client URLs, and every
// etcdctl call dialling with those files. None: failover-ready (hactl
// follows the volume and the ETCD_* files to the Secret).
//
// kubeadm (shape kubeadm-stacked, in kube-system, not in Demo): kubeadm's
// stacked etcd, laid out as kubeadm and the kubelet do (kubeadm.go): an
// etcd CA and per-node leaves written under Env.NodeDir(node-N)/etc/
// kubernetes/pki, then per node the mirror pod etcd-node-N of kubeadm's
// /etc/kubernetes/manifests/etcd.yaml; node-1 starts "new" with itself
// only, node-2 and node-3 are each added with member add --learner
// (kubeadm's client: apiserver-etcd-client), started "existing" naming
// the members so far, and promoted. None: failover-ready. The node IP
// in the flags is the member's address (Env.AddressIn).
//
// cozystack etcd-operator (shape cozystack-operator, not in Demo;
// cozystack.go): the operator (github.com/cozystack/etcd-operator,
// v1alpha2, v0.5.x) cannot be built here, so these scenarios play it,
// creating through the API (Env.Dynamic for the custom resources) its
// CRDs, an EtcdCluster, EtcdMembers named <cluster>-<generated>, per
// member a PVC data-<member> and a pod <member> controlled by its
// EtcdMember (buildPod's spec: hostname/subdomain, client mTLS from the
// Secret <cluster>-server-tls, plaintext peers), the Services <cluster>
// and <cluster>-client, the PodDisruptionBudget <cluster>, and
// cert-manager-style Secrets (CozystackServerSecret,
// CozystackOperatorClientSecret). The seed starts "new" with itself only;
// each later member is added as a learner (with the operator-client
// certificate), started "existing" and promoted. Nothing carries a label
// or annotation of hactl's.
//
//   - cozystack: 3 healthy members; the seed's pod still says state new
//     while EtcdCluster.status.clusterID is set. bootstrap_flag_stale.
//   - cozystack-split: the seed lost its data and re-bootstrapped with its
//     pod's flags (the process with another --initial-cluster-token: with
//     the same one etcd gives it its old IDs and it panics on the old
//     leader's heartbeat): a one-member cluster of its own; the CRs keep
//     the old IDs. cluster_id_split, bootstrap_flag_stale
//     (leader_disagreement, member_list_disagreement, cr_member_mismatch,
//     member_unreachable may show too).
//   - cozystack-cr-stale: every pod "existing", 2 of 3 members stopped;
//     the EtcdCluster still says Available with 3 ready members.
//     quorum_unavailable, cr_status_stale (member_unreachable,
//     pod_not_ready, leader_missing, lag_unknown, client_endpoints_missing
//     may show too).
//   - cozystack-member-stale: every pod "existing", healthy, but one
//     non-seed EtcdMember records a member ID its member does not have.
//     cr_member_mismatch.
//
// etcd-druid (shape druid-operator, not in Demo; druid.go): druid
// (github.com/gardener/etcd-druid, druid.gardener.cloud/v1alpha1, v0.37)
// cannot be built here, so these scenarios play it: its CRD
// (EnsureDruidCRDs), an Etcd (DruidEtcd), the Secrets of its client TLS,
// and what its components render: the StatefulSet <etcd>
// (DruidStatefulSet: the etcd-wrapper and backup-restore containers), the
// ConfigMap <etcd>-config (DruidConfigMap), the Services, the PDB, the
// ServiceAccount, Role and RoleBinding, the member and snapshot Leases
// (DruidLeases); then the Etcd's status as druid's health checks compute
// it. The runner runs stand-ins for the two images (sandbox/druidstandin)
// around a real etcd; the backup-restore stand-ins renew the Leases.
//
//   - druid: 3 healthy members, member Leases naming their real IDs and
//     roles, a full snapshot in the Local store. None: failover-ready.
//   - druid-cr-stale: 2 of 3 pods stopped (both containers): no quorum,
//     their Leases no longer renewed, while the Etcd still says Ready.
//     quorum_unavailable, cr_status_stale (member_unreachable,
//     pod_not_ready, leader_missing, lag_unknown,
//     client_endpoints_missing may show too).
//   - druid-member-stale: 3 healthy members, but the Etcd's status.members
//     entry of member 1 carries an ID none of the members has (that of an
//     earlier incarnation) while its Lease, still renewed, names its real
//     ID. cr_member_mismatch.
//
// Patroni scenarios (shape patroni, 3 members; each waits until one
// member is a running primary with the others streaming from it, judged
// from the members' own GET /patroni, before it breaks anything):
//
//   - pg-healthy: None: failover-ready.
//   - pg-paused: maintenance mode (PATCH /config {"pause": true}, as
//     patronictl pause does). maintenance_paused.
//   - pg-replica-lagging: the first replica's startup process is
//     SIGSTOPped (stall-replay; Patroni 3.0.2 undoes
//     pg_wal_replay_pause()) and the primary writes 8 MiB of WAL: the
//     replica receives it and replays none. replica_lagging.
//   - pg-lock-stale: maintenance mode, then the primary's Patroni frozen
//     (freeze-patroni): PostgreSQL keeps running, nobody renews the lock,
//     renewTime + ttl stays in the past (in maintenance mode no replica
//     takes the lock). leader_lock_stale, maintenance_paused,
//     member_unreachable (pod_not_ready may show too: its readiness probe
//     times out).
//   - pg-split-primary: maintenance mode, then pg_ctl promote on a
//     replica: two primaries answering role master (TL1 and TL2).
//     primary_split, maintenance_paused (replica_not_streaming and
//     replica_diverged may show too).
//   - pg-no-sync-standby: synchronous_mode on, both replicas stopped
//     (break stop): the primary runs with no replication and the sync
//     ConfigMap names no standby. sync_standby_missing,
//     member_unreachable (replica_not_streaming, pod_not_ready may show
//     too).
//   - pg-diverged: use_pg_rewind off; maintenance mode, promote a
//     replica, write on it, end maintenance mode: Patroni demotes it but
//     cannot rewind, so it runs as a replica ahead of the leader on a
//     timeline of its own (its reported timeline is stale) and streams
//     nothing. replica_diverged (replica_not_streaming may show too).
//     Its REST API asks for basic auth on unsafe methods (Secret
//     pg-diverged-rest-auth, named by hactl.dev/rest-auth-secret).
package scenario
