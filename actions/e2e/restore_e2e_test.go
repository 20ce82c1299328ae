package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/engine"
	etcdengine "github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/internal/ocitest"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

const (
	restoreKeys   = 10000
	restorePrefix = "/hactl-e2e/restore/"
)

func restoreKey(i int) string   { return fmt.Sprintf("%skey-%05d", restorePrefix, i) }
func restoreValue(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("r", i%50)) }

// TestRestoreAfterQuorumLoss seeds a generation from a cluster holding
// 10k keys, writes more, refuses a restore while the cluster has quorum,
// stops two of its three members, restores the generation through the real
// kubectl and checks that every member serves exactly the generation's
// keys, on its own.
func TestRestoreAfterQuorumLoss(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	gen := restoreGeneration(t)
	ctx := context.Background()
	s3, err := s.SB.S3()
	if err != nil {
		t.Fatal(err)
	}
	writeAfter(t, cluster)

	// With quorum, a restore is refused and changes nothing.
	r := s.Hactl(t, "restore", cluster, "--generation", gen, "--yes")
	if r.Code != 5 || !strings.Contains(r.Stdout+r.Stderr, "cluster_has_quorum") || !strings.Contains(r.Stdout+r.Stderr, "--force") {
		t.Fatalf("restore of a healthy cluster: want exit 5 with cluster_has_quorum and --force, got %s", r)
	}
	sts, err := s.KC.AppsV1().StatefulSets(namespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("a refused restore changed the StatefulSet: %v %v", err, sts.Spec.Replicas)
	}
	// An unknown generation is refused before anything is decided.
	if r := s.Hactl(t, "restore", cluster, "--generation", "no-such-gen", "--yes"); r.Code != 5 || !strings.Contains(r.Stderr, "no-such-gen") {
		t.Fatalf("restore of a missing generation: want exit 5, got %s", r)
	}

	loseQuorum(t, cluster)

	// The agent image is a tag in a real registry: the plan pins it to
	// the digest the registry names, and every restore pod runs that.
	agentTag, agentPinned := agentImageInRegistry(t)
	r = s.Hactl(t, "restore", cluster, "--generation", gen, "--yes", "-o", "json", "--agent-image", agentTag)
	if r.Code != 0 {
		t.Fatalf("restore after quorum loss: %s", r)
	}
	doc := e2esuite.Receipts(t, r)
	if !strings.Contains(r.Stderr, "agent image: "+agentPinned) {
		t.Errorf("the plan does not name the agent image by the digest its registry names (%s)\n%s", agentPinned, r)
	}
	for _, rc := range doc.Receipts {
		if rc.Step == model.StepRunRestore && rc.Outcome == model.OutcomeDone && !strings.Contains(rc.Detail, "running agent image "+agentPinned) {
			t.Errorf("a restore pod did not run the agent image by digest %s: %s", agentPinned, rc.Detail)
		}
	}
	counts := map[model.StepKind]int{}
	for _, rc := range doc.Receipts {
		if rc.Outcome == model.OutcomeDone || rc.Outcome == model.OutcomeAlready {
			counts[rc.Step]++
		}
	}
	for k, want := range map[model.StepKind]int{model.StepScaleDown: 1, model.StepRunRestore: 3, model.StepScaleUp: 1, model.StepDeleteRestorePod: 3} {
		if counts[k] != want {
			t.Errorf("%d %s receipts, want %d\n%s", counts[k], k, want, r)
		}
	}
	// The wait for the restored members comes once, and again whenever an
	// observation between the restore pods' deletions finds a member not
	// (yet) answering, as on a loaded machine.
	if counts[model.StepAwaitRestored] < 1 {
		t.Errorf("no await-restored receipt\n%s", r)
	}
	for _, out := range []string{r.Stdout, r.Stderr} {
		if strings.Contains(out, s3.SecretKey) || strings.Contains(out, s3.AccessKey) {
			t.Fatal("a store credential appears in restore's output")
		}
	}

	checkRestoredCluster(t, cluster)
	// Failover-ready once the restored members settle: a leader election
	// right after the restart (a loaded machine) may still be under way.
	poll.Until(t, 30*time.Second, "status after the restore to exit 0 (failover-ready)", func() error {
		if r := s.Hactl(t, "status", cluster); r.Code != 0 {
			return fmt.Errorf("exit %d\n%s", r.Code, r)
		}
		return nil
	}, poll.Every(time.Second))
	pods, err := s.KC.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: actions.RestoreLabel + "=" + cluster})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("restore pods left: %d (%v)", len(pods.Items), err)
	}
	led := s.Ledger(t, cluster)
	var done bool
	for _, e := range led.Entries {
		if e.Action == model.ActionRestore && e.State == model.EntryDone && e.Generation == gen && e.Replicas == 3 {
			done = true
		}
	}
	if !done {
		t.Errorf("no done restore entry in the ledger: %+v", led.Entries)
	}
}

// agentImageInRegistry pushes an image under a tag to a real registry
// for the test's life, and returns the tag and the tag pinned to the
// digest it names.
func agentImageInRegistry(t *testing.T) (tag, pinned string) {
	t.Helper()
	tag, d := ocitest.Start(t).Push(t, "hactl/agent:e2e")
	return tag, tag + "@" + d
}

// restoreGen is the generation the restore tests share, seeded once.
var restoreGen string

// restoreGeneration sets up the cluster's store (a Secret with the
// credentials and the StatefulSet's annotations, as an operator would),
// writes restoreKeys keys and seeds a generation of them, once.
func restoreGeneration(t *testing.T) string {
	t.Helper()
	if restoreGen != "" {
		return restoreGen
	}
	cluster := staticCluster
	s.WaitFailoverReady(t, cluster)
	s.SetupStore(t, cluster)
	fill(t, s.Member(t, cluster+"-0"), restoreKeys)
	gen := "restore-e2e-1"
	// The capture pod's image is a tag in a real registry: it runs the
	// digest the registry names.
	agentTag, agentPinned := agentImageInRegistry(t)
	r := s.Hactl(t, "seed", cluster, "--generation", gen, "--yes", "-o", "json", "--agent-image", agentTag)
	if r.Code != 0 {
		t.Fatalf("seed: %s", r)
	}
	if !strings.Contains(r.Stdout, "running agent image "+agentPinned) || !strings.Contains(r.Stderr, "agent image: "+agentPinned) {
		t.Errorf("the seed's plan and capture receipt do not name the agent image by the digest its registry names (%s)\n%s", agentPinned, r)
	}
	restoreGen = gen
	return gen
}

// writeAfter writes a key after the generation: a restore loses it.
func writeAfter(t *testing.T, cluster string) {
	t.Helper()
	s.WaitFailoverReady(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Member(t, cluster+"-0").Put(ctx, restorePrefix+"after", "lost"); err != nil {
		t.Fatal(err)
	}
}

// loseQuorum stops two of the cluster's three members and waits until
// status says so (exit 4, not control-ready).
func loseQuorum(t *testing.T, cluster string) {
	t.Helper()
	for _, m := range []string{cluster + "-1", cluster + "-2"} {
		if err := s.SB.Break(context.Background(), namespace+"/"+m, fault.Stop); err != nil {
			t.Fatalf("stopping %s: %v", m, err)
		}
	}
	waitStatusExit(t, cluster, 4)
}

// checkRestoredCluster checks that every member, on its own, serves
// exactly the generation's keys.
func checkRestoredCluster(t *testing.T, cluster string) {
	t.Helper()
	for i := 0; i < 3; i++ {
		checkRestored(t, fmt.Sprintf("%s-%d", cluster, i))
	}
}

// TestRestoreSIGKILLResumes kills restore right after each of its changing
// steps and checks that a rerun resumes: it takes over the dead holder's
// lock, never scales down again once the restore pods ran, and ends with
// every member serving exactly the generation's keys.
func TestRestoreSIGKILLResumes(t *testing.T) {
	skipShort(t)
	cluster := staticCluster
	gen := restoreGeneration(t)
	for _, step := range []model.StepKind{model.StepScaleDown, model.StepRunRestore, model.StepScaleUp} {
		t.Run(string(step), func(t *testing.T) {
			writeAfter(t, cluster)
			loseQuorum(t, cluster)
			p := s.Start(t, nil, "restore", cluster, "--generation", gen, "--yes")
			killed := p.KillAt(t, "] "+string(step)+" done")
			if !killed {
				t.Fatalf("the run finished (exit %d) without a %s step:\n%s", p.Code, step, p.All)
			}
			r := s.Hactl(t, "restore", cluster, "--generation", gen, "--yes", "-o", "json")
			if r.Code != 0 {
				t.Fatalf("rerun after SIGKILL at %s: %s", step, r)
			}
			if !strings.Contains(r.Stderr, "took the lock over from stale holder") {
				t.Errorf("the rerun did not report taking over the dead holder's lock:\n%s", r.Stderr)
			}
			for _, rc := range e2esuite.Receipts(t, r).Receipts {
				if rc.Step == model.StepScaleDown && rc.Outcome == model.OutcomeDone && step != model.StepScaleDown {
					t.Errorf("the rerun scaled down again after the restore pods ran: %+v", rc)
				}
			}
			checkRestoredCluster(t, cluster)
			s.WaitFailoverReady(t, cluster)
		})
	}
}

// fill writes n keys through c, 100 to a transaction.
func fill(t *testing.T, c *etcdengine.Client, n int) {
	t.Helper()
	kv := c.KV()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100 && j < n; j++ {
			ops = append(ops, clientv3.OpPut(restoreKey(j), restoreValue(j)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := kv.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			t.Fatalf("writing keys %d..: %v", i, err)
		}
	}
}

// checkRestored reads every key under the prefix from pod alone (a
// serializable read of its own store), polling until it answers.
func checkRestored(t *testing.T, pod string) {
	t.Helper()
	var resp *clientv3.GetResponse
	poll.Until(t, 2*time.Minute, pod+" to answer after the restore", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := etcdengine.Open(ctx, engine.Target{Member: pod, Namespace: namespace, Pod: pod, Port: 2379},
			engine.ProbeOptions{Dial: s.Dial, Timeout: 20 * time.Second})
		if err != nil {
			return err
		}
		defer c.Close()
		resp, err = c.KV().Get(ctx, restorePrefix, clientv3.WithPrefix(), clientv3.WithSerializable())
		return err
	}, poll.Every(time.Second))
	if len(resp.Kvs) != restoreKeys {
		t.Fatalf("%s serves %d keys under %s, want exactly %d", pod, len(resp.Kvs), restorePrefix, restoreKeys)
	}
	for i, kv := range resp.Kvs {
		if string(kv.Key) != restoreKey(i) || string(kv.Value) != restoreValue(i) {
			t.Fatalf("%s: key %d is %s=%s, want %s=%s", pod, i, kv.Key, kv.Value, restoreKey(i), restoreValue(i))
		}
	}
}

// waitStatusExit polls `status CLUSTER` until it exits with code.
func waitStatusExit(t *testing.T, cluster string, code int) {
	t.Helper()
	poll.Until(t, 2*time.Minute, fmt.Sprintf("status %s to exit %d", cluster, code), func() error {
		if r := s.Hactl(t, "status", cluster, "--probe-timeout", "2s"); r.Code != code {
			return fmt.Errorf("%s", r)
		}
		return nil
	}, poll.Every(time.Second))
}
