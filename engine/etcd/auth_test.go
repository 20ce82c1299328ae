package etcd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/engine/etcd"
	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/etcdcluster"
)

// A cluster with auth enabled (Bitnami's chart's default) answers no
// unauthenticated probe: without a password every member is a
// credentials failure that says so, with a wrong one too; with root's
// password every member answers, in one cluster.
func TestProbeAuthEnabled(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	d := newTCPDialer(t, c)
	ts := targets(c)
	poll.Until(t, 10*time.Second, "a settled healthy cluster", func() error {
		facts, _ := probe(t, d, ts, 2*time.Second)
		return healthy(facts, 3)
	})
	enableAuth(t, c)
	for _, tc := range []struct {
		name string
		auth *engine.BasicAuth
		want string
	}{
		{"no password", nil, "user and password"},
		{"a wrong password", &engine.BasicAuth{Username: "root", Password: "wrong"}, "user and password"},
	} {
		// The leader answered AuthEnable once it applied it; each
		// follower applies it a moment later.
		poll.Until(t, 10*time.Second, tc.name+": every member refusing", func() error {
			facts := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: d.Dial, Auth: tc.auth})
			for i, f := range facts {
				if strings.Contains(f.Err, "wrong") || strings.Contains(f.Err, "s3cret") {
					t.Fatalf("%s: the error carries the password: %q", tc.name, f.Err)
				}
				if f.Reachable || f.Failure != model.ProbeFailureCredentials || !strings.Contains(f.Err, tc.want) {
					return fmt.Errorf("%s: reachable %v, failure %q, err %q; want a credentials failure saying %q", ts[i].Member, f.Reachable, f.Failure, f.Err, tc.want)
				}
			}
			return nil
		})
	}
	root := &engine.BasicAuth{Username: "root", Password: "s3cret"}
	// A token is issued through the log, after a bcrypt check: on a
	// loaded machine a round may end first.
	var facts []model.EngineFacts
	poll.Until(t, 30*time.Second, "every member answering root", func() error {
		facts = etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: d.Dial, Auth: root})
		return healthy(facts, 3)
	})
	// Kept clients keep their token from round to round: once each has
	// one (issued within a round, polled on a loaded machine), the next
	// round asks for none.
	conns := engine.NewConns()
	defer conns.Close()
	poll.Until(t, 30*time.Second, "every kept client holding a token", func() error {
		facts = etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: d.Dial, Auth: root, Conns: conns})
		return healthy(facts, 3)
	})
	facts = etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 5 * time.Second, Dial: d.Dial, Auth: root, Conns: conns})
	if err := healthy(facts, 3); err != nil {
		t.Errorf("kept clients, the round after: %v", err)
	}

	// Quorum lost: a member that runs answers, but etcd issues no token
	// without a quorum; the stopped ones are not reached. Each says so,
	// not a bare deadline.
	for _, m := range c.Members[1:] {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	facts = etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 2 * time.Second, Dial: d.Dial, Auth: root})
	if f := facts[0]; f.Reachable || f.Failure != model.ProbeFailureTimeout || !strings.Contains(f.Err, "issued no auth token") {
		t.Errorf("the member left running: reachable %v, failure %q, err %q; want it said that no token was issued", f.Reachable, f.Failure, f.Err)
	}
	for i, f := range facts[1:] {
		if f.Reachable || f.Failure != model.ProbeFailureConnect {
			t.Errorf("stopped %s: reachable %v, failure %q, err %q; want a connect failure", ts[i+1].Member, f.Reachable, f.Failure, f.Err)
		}
	}
	// A kept client still has its token: the survivor answers for itself.
	facts = etcd.New().Probe(context.Background(), ts[:1], engine.ProbeOptions{Timeout: 5 * time.Second, Dial: d.Dial, Auth: root, Conns: conns})
	if f := facts[0]; !f.Reachable || f.MemberID == "" {
		t.Errorf("the kept client of the survivor: reachable %v, err %q", f.Reachable, f.Err)
	}
}

// Bitnami's chart names the root user's password with ETCD_ROOT_PASSWORD
// from its Secret: the decoder keeps the reference (never a value); a
// literal password in the template is not taken.
func TestTemplatePasswordFromSecret(t *testing.T) {
	pt := func(env ...model.EnvVar) model.PodTemplate {
		return model.PodTemplate{Containers: []model.Container{{Name: "etcd", Image: "docker.io/bitnami/etcd:3.6.4",
			Env: append([]model.EnvVar{{Name: "ETCD_ON_K8S", Value: "yes"}}, env...)}}}
	}
	ref := &model.SecretKeyRef{Secret: "etcd", Key: "etcd-root-password"}
	got := etcd.New().Template(pt(model.EnvVar{Name: "ETCD_ROOT_PASSWORD", Ref: model.EnvRefOther, Secret: ref}))
	if got.Password == nil || *got.Password != *ref || got.User != "root" || !strings.Contains(got.PasswordFrom, "ETCD_ROOT_PASSWORD") {
		t.Errorf("from a Secret: user %q password %+v from %q", got.User, got.Password, got.PasswordFrom)
	}
	if got := etcd.New().Template(pt(model.EnvVar{Name: "ETCD_ROOT_PASSWORD", Value: "literal"})); got.Password != nil || got.User != "" {
		t.Errorf("a literal password was taken: %+v", got.Password)
	}
}

// A learner of a cluster with auth enabled issues no token (it refuses
// Authenticate), but takes the one a voter issued, which every member
// applied through the log: probed with root's password it answers as a
// learner, beside the voters and on its own after them, as etcd's client
// with a voter's token sees it.
func TestProbeAuthLearner(t *testing.T) {
	c := startCluster(t, etcdcluster.Options{Members: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	learner, err := c.AddLearner(ctx, "etcd-3")
	if err != nil {
		t.Fatal(err)
	}
	enableAuth(t, c)
	d := newTCPDialer(t, c)
	ts := targets(c)
	root := &engine.BasicAuth{Username: "root", Password: "s3cret"}
	// The learner's own word, through a client holding a voter's token.
	auth, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Username: "root", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	st, err := auth.Status(ctx, c.Members[0].ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	list, err := auth.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var learnerID string
	for _, m := range list.Members {
		if m.Name == learner.Name && m.IsLearner {
			learnerID = etcd.FormatID(m.ID)
		}
	}
	if learnerID == "" {
		t.Fatalf("%s is not listed as a learner: %+v", learner.Name, list.Members)
	}
	poll.Until(t, 20*time.Second, "every member, the learner too, answering root", func() error {
		facts := etcd.New().Probe(context.Background(), ts, engine.ProbeOptions{Timeout: 3 * time.Second, Dial: d.Dial, Auth: root})
		for i, f := range facts {
			if !f.Reachable || f.ClusterID != etcd.FormatID(st.Header.ClusterId) {
				return fmt.Errorf("%s: reachable %v, cluster %q, err %q", ts[i].Member, f.Reachable, f.ClusterID, f.Err)
			}
		}
		if f := facts[3]; !f.IsLearner || f.MemberID != learnerID {
			return fmt.Errorf("the learner answers learner %v, ID %q; etcd lists it as learner %s", f.IsLearner, f.MemberID, learnerID)
		}
		return nil
	})
	// Alone, after the voters: the token they issued.
	if f := etcd.New().Probe(context.Background(), ts[3:], engine.ProbeOptions{Timeout: 3 * time.Second, Dial: d.Dial, Auth: root})[0]; !f.Reachable || !f.IsLearner {
		t.Errorf("the learner alone: reachable %v, learner %v, err %q", f.Reachable, f.IsLearner, f.Err)
	}
	// With a wrong password no voter issues a token: the learner is not
	// answered for by another's.
	wrong := &engine.BasicAuth{Username: "root", Password: "wrong"}
	if f := etcd.New().Probe(context.Background(), ts[3:], engine.ProbeOptions{Timeout: 2 * time.Second, Dial: d.Dial, Auth: wrong})[0]; f.Reachable {
		t.Errorf("the learner answered with a wrong password")
	}
}

// enableAuth turns c's auth on as Bitnami's entrypoint does: user root
// (password s3cret) with role root.
func enableAuth(t *testing.T, c *etcdcluster.Cluster) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[0].ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
}
