// Package scenario holds the sandbox's HA clusters: pod templates for the
// three etcd bootstrap shapes, written as a real chart would ship them,
// and the named scenarios that set a cluster up in a given state through
// the Kubernetes API and the sandbox's fault injection only.
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
//
// Every cluster has a headless Service (<name>-headless, giving members
// their DNS names), a client Service (<name>-client) and, unless the
// scenario says otherwise, a PodDisruptionBudget (maxUnavailable 1); its
// StatefulSet, pods and PVCs carry hactl.dev/engine=etcd. Templates use
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
package scenario
