package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// Env is what a scenario may use: the API (as any client would) and the
// sandbox's fault injection. Nothing else: a scenario's cluster is set up
// the way an operator would set up a real one.
type Env struct {
	Kube kubernetes.Interface
	// Dynamic reaches custom resources (the cozystack etcd-operator's
	// CRDs and EtcdClusters and EtcdMembers).
	Dynamic   dynamic.Interface
	Namespace string
	// Break injects a fault into the member running as pod name in
	// Namespace.
	Break func(ctx context.Context, pod string, kind fault.Kind, args []string) error
	// Address returns the loopback address the member of pod name has (or
	// will have: a pod that does not exist yet is allocated one), where
	// its client port (2379) and advertised peer port (2380) listen.
	Address func(pod string) (string, error)
	// AddressIn is Address for pod name in namespace ns (kubeadm's etcd
	// pods are in kube-system). For a hostNetwork pod the address stands
	// for its node's IP.
	AddressIn func(ns, pod string) (string, error)
	// NodeDir returns the host directory standing for the root of fake
	// node node's filesystem: the runner maps a hostPath volume /p of a
	// pod on node to NodeDir(node)/p, and a scenario writes there what
	// an installer writes on the node (kubeadm's /etc/kubernetes/pki).
	NodeDir func(node string) string
	// Exec runs argv in the first container of pod name, as `kubectl
	// exec` would (as the container's user, with its environment), and
	// returns its output.
	Exec func(ctx context.Context, pod string, argv []string) (string, error)
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Scenario is a named cluster state the sandbox can set up.
type Scenario struct {
	// Name is the scenario's name and its cluster's (StatefulSet's) name.
	Name  string
	Shape Shape
	// Namespace is where the cluster is when it is not Env.Namespace
	// (kubeadm's stacked etcd: kube-system); empty: Env.Namespace.
	Namespace string
	// Cluster is the cluster's name, as `kubectl hactl status NAME` takes
	// it, when it is not Name (kubeadm's stacked etcd is named by its
	// pods' component: etcd); empty: Name.
	Cluster string
	// Summary says what the scenario sets up.
	Summary string
	// Reasons are the reason codes `kubectl hactl status` should report
	// for the cluster once it is set up (empty: failover-ready).
	Reasons []model.ReasonCode
	// MayAlso are reason codes that can accompany Reasons, depending on
	// timing (what a member says at the instant it is probed).
	MayAlso []model.ReasonCode
	run     func(ctx context.Context, env Env, s *Scenario) error
}

// ClusterNamespace is the namespace of the scenario's cluster in a
// sandbox whose scenarios' namespace is ns.
func (s *Scenario) ClusterNamespace(ns string) string {
	if s.Namespace != "" {
		return s.Namespace
	}
	return ns
}

// ClusterName is the name of the scenario's cluster (Cluster, else
// Name).
func (s *Scenario) ClusterName() string {
	if s.Cluster != "" {
		return s.Cluster
	}
	return s.Name
}

// Owns reports whether pod (in ClusterNamespace) is one of the scenario's
// members: <cluster>-<ordinal> of its StatefulSet, for kubeadm's stacked
// etcd the mirror pods etcd-<node>, and for the cozystack etcd-operator's
// clusters <name>-<5 lowercase letters or digits> (its EtcdMembers'
// names, which the API server generates), for Crunchy PGO's
// <cluster>-instance1-<4 of PGO's alphabet>-0 (its instances' pods).
func (s *Scenario) Owns(pod string) bool {
	if s.Shape == KubeadmStacked {
		return strings.HasPrefix(pod, "etcd-")
	}
	if s.Shape == CozystackOperator {
		return IsCozystackMemberName(s.ClusterName(), pod)
	}
	if s.Shape == PGOOperator {
		return IsPGOPodName(s.ClusterName(), pod)
	}
	ord, ok := strings.CutPrefix(pod, s.ClusterName()+"-")
	if !ok || ord == "" {
		return false
	}
	for _, c := range ord {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Run sets the scenario's cluster up in env.Namespace (or its own
// Namespace) and returns once it is in its intended state.
func (s *Scenario) Run(ctx context.Context, env Env) error {
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	start := time.Now()
	if err := s.run(ctx, env, s); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	env.Logf("scenario %s: ready in %s", s.Name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

var registry = map[string]*Scenario{}

func register(s *Scenario) { registry[s.Name] = s }

// Get returns the named scenario.
func Get(name string) (*Scenario, error) {
	if s, ok := registry[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("unknown scenario %q (one of: %s)", name, strings.Join(Names(), ", "))
}

// Names lists every scenario, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Demo is the set of scenarios a sandbox starts when none is named: one
// namespace, several clusters in different states.
var Demo = []string{
	"healthy",
	"healthy-self-registering",
	"lagging-learner",
	"seed-rebootstrap",
	"crashloop",
	"colocated",
	"no-pdb",
	"pg-healthy",
	"pg-replica-lagging",
}

// DefaultNamespace is where scenarios' clusters go unless told otherwise.
const DefaultNamespace = "hactl-demo"

func init() {
	register(&Scenario{
		Name:    "healthy",
		Shape:   StaticExisting,
		Summary: "3 members, one per node (required anti-affinity), PodDisruptionBudget, state existing after formation",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, err := formStaticExisting(ctx, env, Params{Name: s.Name, Replicas: 3, AntiAffinity: "required", PDB: true})
			return err
		},
	})
	register(&Scenario{
		Name:    "healthy-self-registering",
		Shape:   SelfRegistering,
		Summary: "3 members started by a Bitnami-style self-registering entrypoint (ETCD_ON_K8S=yes), one per node, PodDisruptionBudget",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			p := Params{Name: s.Name, Namespace: env.Namespace, Replicas: 3, AntiAffinity: "required", PDB: true}
			if err := apply(ctx, env, SelfRegistering, p); err != nil {
				return err
			}
			return waitRollout(ctx, env, s.Name)
		},
	})
	register(&Scenario{
		Name:    "no-pdb",
		Shape:   StaticExisting,
		Summary: "a healthy 3-member cluster without a PodDisruptionBudget",
		Reasons: []model.ReasonCode{model.ReasonPDBMissing},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, err := formStaticExisting(ctx, env, Params{Name: s.Name, Replicas: 3, AntiAffinity: "required"})
			return err
		},
	})
	register(&Scenario{
		Name:    "colocated",
		Shape:   StaticExisting,
		Summary: "a healthy 3-member cluster whose members all run on node-1",
		Reasons: []model.ReasonCode{model.ReasonMembersColocated},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, err := formStaticExisting(ctx, env, Params{Name: s.Name, Replicas: 3, Node: "node-1", PDB: true})
			return err
		},
	})
	register(&Scenario{
		Name:  "crashloop",
		Shape: StaticExisting,
		Summary: "3 members; member 2's data dir was wiped, and with --initial-cluster-state=existing its etcd " +
			"panics on every start (raft: tocommit out of range): CrashLoopBackOff",
		Reasons: []model.ReasonCode{model.ReasonPodCrashLooping, model.ReasonMemberUnreachable},
		MayAlso: []model.ReasonCode{model.ReasonPodNotReady},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			if _, err := formStaticExisting(ctx, env, Params{Name: s.Name, Replicas: 3, AntiAffinity: "required", PDB: true}); err != nil {
				return err
			}
			victim := MemberName(s.Name, 2)
			if err := env.Break(ctx, victim, fault.Wipe, nil); err != nil {
				return err
			}
			return waitPod(ctx, env, victim, "in CrashLoopBackOff", crashLooping)
		},
	})
	register(&Scenario{
		Name:  "seed-rebootstrap",
		Shape: StaticNew,
		Summary: "seed 000 for real: a static-new cluster whose member 0 lost its data dir and was restarted with the " +
			"seed's flags (state new, an initial cluster of itself): it formed its own one-member cluster, same member ID, " +
			"new cluster ID, and its pod is Ready",
		Reasons: []model.ReasonCode{model.ReasonClusterIDSplit, model.ReasonBootstrapFlagStale},
		MayAlso: []model.ReasonCode{model.ReasonLeaderDisagreement, model.ReasonMemberListDisagreement},
		run:     runSeedRebootstrap,
	})
	register(&Scenario{
		Name:  "lagging-learner",
		Shape: StaticExisting,
		Summary: "3 voters and a learner (member 3) added with `member add --learner`, which caught up, was then " +
			"cut off from its peers (isolated) while 2000 more writes landed: it answers, 2000 entries behind the leader",
		Reasons: []model.ReasonCode{model.ReasonLearnerPending, model.ReasonPodNotReady},
		MayAlso: []model.ReasonCode{model.ReasonMemberLagging, model.ReasonLagUnknown},
		run:     runLaggingLearner,
	})
}
