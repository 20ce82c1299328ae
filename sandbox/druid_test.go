package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/hactl-dev/hactl/internal/poll"
	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// druidScenarios are etcd-druid's scenarios, which TestSandbox starts
// beside the demo set.
var druidScenarios = []string{"druid", "druid-cr-stale", "druid-member-stale"}

// druidOperator checks, in TestSandbox's sandbox, that etcd-druid's
// scenarios are laid out as druid lays them out, with nothing of hactl's
// on them, and that their real state is what each claims, asked
// independently with the client Secret's certificate: 3 real members of
// one cluster whose member Leases name their real IDs and the leader, a
// full snapshot in the Local store whose revision the full-snap Lease
// holds, the delta-snap Lease renewing (druid); one member answering and
// no quorum while the Etcd still says Ready (druid-cr-stale); 3 members
// answering while the Etcd's entry of one names an ID none of them has
// and its Lease keeps naming its real ID (druid-member-stale).
func druidOperator(t *testing.T, sb *Sandbox) {
	kc := kube(t, sb)
	cfg, err := sb.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := sb.State.Namespace
	leases := kc.CoordinationV1().Leases(ns)

	type member struct {
		name, addr string
		st         *clientv3.StatusResponse
		err        error
	}
	load := func(t *testing.T, name string) (*unstructured.Unstructured, *tls.Config, []member) {
		t.Helper()
		e, err := dyn.Resource(scenario.EtcdGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tc, err := scenario.DruidClientTLS(ctx, kc, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		var out []member
		for i := range 3 {
			m, err := sb.Member(ctx, ns+"/"+scenario.DruidMemberLease(name, i))
			if err != nil {
				t.Fatal(err)
			}
			dm := member{name: scenario.DruidMemberLease(name, i), addr: m.Address}
			dm.st, dm.err = tlsStatus(ctx, "https://"+net.JoinHostPort(m.Address, "2379"), tc)
			out = append(out, dm)
		}
		return e, tc, out
	}
	ready := func(t *testing.T, e *unstructured.Unstructured) {
		t.Helper()
		conds, _, _ := unstructured.NestedSlice(e.Object, "status", "conditions")
		got := map[string]string{}
		for _, c := range conds {
			m := c.(map[string]any)
			got[fmt.Sprint(m["type"])] = fmt.Sprint(m["status"], "/", m["reason"])
		}
		if got["Ready"] != "True/Quorate" || got["AllMembersReady"] != "True/AllMembersReady" || got["BackupReady"] != "True/BackupSucceeded" ||
			got["ClusterIDMismatch"] != "False/NoClusterIDMismatchDetected" {
			t.Errorf("Etcd %s's conditions %v", e.GetName(), got)
		}
		members, _, _ := unstructured.NestedSlice(e.Object, "status", "members")
		if len(members) != 3 {
			t.Fatalf("Etcd %s lists %d members", e.GetName(), len(members))
		}
		for _, m := range members {
			if mm := m.(map[string]any); mm["status"] != "Ready" || mm["reason"] != "LeaseSucceeded" {
				t.Errorf("Etcd %s's member %v", e.GetName(), mm)
			}
		}
		if r, _, _ := unstructured.NestedInt64(e.Object, "status", "readyReplicas"); r != 3 {
			t.Errorf("Etcd %s: readyReplicas %d", e.GetName(), r)
		}
	}

	t.Run("laid out as druid does, nothing of hactl's", func(t *testing.T) {
		for _, name := range druidScenarios {
			e, err := dyn.Resource(scenario.EtcdGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hactlFree(t, "Etcd", name, e.GetLabels(), e.GetAnnotations())
			sts, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ctl := metav1.GetControllerOf(sts); ctl == nil || ctl.Kind != "Etcd" || ctl.APIVersion != scenario.DruidAPIVersion || ctl.UID != e.GetUID() {
				t.Errorf("StatefulSet %s's controller %+v", name, ctl)
			}
			sel := metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: scenario.DruidLabels(name)})}
			pods, err := kc.CoreV1().Pods(ns).List(ctx, sel)
			if err != nil || len(pods.Items) != 3 {
				t.Fatalf("pods of %s: %v", name, err)
			}
			for _, p := range pods.Items {
				hactlFree(t, "Pod", p.Name, p.Labels, p.Annotations)
				if ctl := metav1.GetControllerOf(&p); ctl == nil || ctl.Kind != "StatefulSet" || ctl.UID != sts.UID {
					t.Errorf("pod %s's controller %+v", p.Name, ctl)
				}
				m, err := sb.Member(ctx, ns+"/"+p.Name)
				if err != nil {
					t.Fatal(err)
				}
				if p.Status.PodIP != m.PodIP {
					t.Errorf("pod %s reports IP %s, the runner gave it %s", p.Name, p.Status.PodIP, m.PodIP)
				}
			}
			ls, err := leases.List(ctx, sel)
			if err != nil || len(ls.Items) != 5 {
				t.Fatalf("Leases of %s: %v", name, err)
			}
			for _, l := range ls.Items {
				hactlFree(t, "Lease", l.Name, l.Labels, l.Annotations)
				if ctl := metav1.GetControllerOf(&l); ctl == nil || ctl.UID != e.GetUID() {
					t.Errorf("Lease %s's controller %+v", l.Name, ctl)
				}
			}
		}
	})

	t.Run("druid: 3 real members, Leases with their IDs, a real snapshot", func(t *testing.T) {
		const name = "druid"
		e, tc, ms := load(t, name)
		ready(t, e)
		var cluster uint64
		ids := map[uint64]bool{}
		for _, m := range ms {
			if m.err != nil {
				t.Fatalf("%s: %v", m.name, m.err)
			}
			if cluster != 0 && m.st.Header.ClusterId != cluster {
				t.Errorf("%s is in cluster %x, not %x", m.name, m.st.Header.ClusterId, cluster)
			}
			cluster = m.st.Header.ClusterId
			ids[m.st.Header.MemberId] = true
		}
		if len(ids) != 3 {
			t.Fatalf("member IDs %v", ids)
		}
		// Every member Lease names its member's real ID, the cluster and
		// its role (the sidecars renew every 10 s: a leader change shows
		// within one heartbeat).
		poll.Until(t, 30*time.Second, "member Leases naming the members' IDs and roles", func() error {
			for _, m := range ms {
				st, err := tlsStatus(ctx, "https://"+net.JoinHostPort(m.addr, "2379"), tc)
				if err != nil {
					return err
				}
				l, err := leases.Get(ctx, m.name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				want := scenario.DruidHolderIdentity(st.Header.MemberId, st.Header.ClusterId, st.Header.MemberId == st.Leader)
				if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != want {
					return fmt.Errorf("Lease %s holds %v, want %s", m.name, l.Spec.HolderIdentity, want)
				}
			}
			return nil
		})
		// The Etcd's members name the IDs the Leases hold.
		members, _, _ := unstructured.NestedSlice(e.Object, "status", "members")
		for _, m := range members {
			id, err := strconv.ParseUint(fmt.Sprint(m.(map[string]any)["id"]), 16, 64)
			if err != nil || !ids[id] {
				t.Errorf("Etcd member %v: not a member's ID (%v)", m, err)
			}
		}
		full, err := leases.Get(ctx, scenario.DruidFullSnapLease(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if full.Spec.HolderIdentity == nil || full.Spec.RenewTime == nil {
			t.Fatalf("full-snap Lease %+v", full.Spec)
		}
		rev, err := strconv.ParseInt(*full.Spec.HolderIdentity, 10, 64)
		if err != nil || rev < 1 {
			t.Fatalf("full-snap Lease holds %q", *full.Spec.HolderIdentity)
		}
		pattern := filepath.Join(sb.Dir, "nodes", "*", "etc", "gardener", "local-backupbuckets", scenario.DruidStoreContainer(name), name, "v2",
			fmt.Sprintf("Full-00000000-%08d-*.gz", rev))
		if files, _ := filepath.Glob(pattern); len(files) != 1 {
			t.Errorf("snapshot files %v (pattern %s)", files, pattern)
		}
		// The delta-snap Lease renews every deltaSnapshotPeriod.
		first, err := leases.Get(ctx, scenario.DruidDeltaSnapLease(name), metav1.GetOptions{})
		if err != nil || first.Spec.RenewTime == nil {
			t.Fatalf("delta-snap Lease %v", err)
		}
		poll.Until(t, scenario.DruidDeltaSnapshotPeriod+20*time.Second, "the delta-snap Lease renewed", func() error {
			l, err := leases.Get(ctx, scenario.DruidDeltaSnapLease(name), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !l.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
				return errors.New("not renewed yet")
			}
			return nil
		})
		// kubectl port-forward reaches a member's TLS client port.
		local := portForward(t, sb, ns, scenario.DruidMemberLease(name, 0), 2379)
		st, err := tlsStatus(ctx, "https://"+local, tc)
		if err != nil || st.Header.ClusterId != cluster {
			t.Errorf("through kubectl port-forward: %v", err)
		}
	})

	t.Run("druid-cr-stale: no quorum, the Etcd still Ready", func(t *testing.T) {
		const name = "druid-cr-stale"
		e, tc, ms := load(t, name)
		ready(t, e)
		if ms[0].err != nil {
			t.Fatalf("%s: %v", ms[0].name, ms[0].err)
		}
		for _, m := range ms[1:] {
			if m.err == nil {
				t.Errorf("%s answers", m.name)
			}
		}
		c, err := clientv3.New(clientv3.Config{
			Endpoints: []string{"https://" + net.JoinHostPort(ms[0].addr, "2379")}, DialTimeout: 2 * time.Second, TLS: tc, Logger: zap.NewNop(),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := c.Get(gctx, "quorum-check"); err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("a linearizable read on %s: %v", ms[0].name, err)
		}
	})

	t.Run("druid-member-stale: the Etcd records another ID for one member", func(t *testing.T) {
		const name = "druid-member-stale"
		e, _, ms := load(t, name)
		ready(t, e)
		ids := map[string]uint64{}
		for _, m := range ms {
			if m.err != nil {
				t.Fatalf("%s: %v", m.name, m.err)
			}
			ids[m.name] = m.st.Header.MemberId
		}
		members, _, _ := unstructured.NestedSlice(e.Object, "status", "members")
		var stale []string
		for _, m := range members {
			mm := m.(map[string]any)
			n := fmt.Sprint(mm["name"])
			id, err := strconv.ParseUint(fmt.Sprint(mm["id"]), 16, 64)
			if err != nil {
				t.Fatalf("Etcd member %v: %v", mm, err)
			}
			if id == ids[n] {
				continue
			}
			stale = append(stale, n)
			for other, oid := range ids {
				if oid == id {
					t.Errorf("Etcd member %s records %s's ID", n, other)
				}
			}
		}
		if want := scenario.DruidMemberLease(name, 1); len(stale) != 1 || stale[0] != want {
			t.Fatalf("Etcd members recording another ID: %v, want [%s]", stale, want)
		}
		// Its Lease, still renewed, names its real ID, and the status stays
		// stale past a heartbeat.
		since := time.Now()
		poll.Until(t, 30*time.Second, "the stale member's Lease renewed with its real ID", func() error {
			l, err := leases.Get(ctx, stale[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			prefix := strconv.FormatUint(ids[stale[0]], 16) + ":"
			if l.Spec.HolderIdentity == nil || !strings.HasPrefix(*l.Spec.HolderIdentity, prefix) || l.Spec.RenewTime == nil {
				return fmt.Errorf("Lease %s holds %v, want %s…", stale[0], l.Spec.HolderIdentity, prefix)
			}
			if !l.Spec.RenewTime.After(since) {
				return errors.New("not renewed yet")
			}
			return nil
		})
		again, err := dyn.Resource(scenario.EtcdGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now, _, _ := unstructured.NestedSlice(again.Object, "status", "members"); !reflect.DeepEqual(now, members) {
			t.Errorf("Etcd %s's members changed: %v, then %v", name, members, now)
		}
	})
}
