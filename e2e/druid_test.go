package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// druidAsk asks member pod of Etcd etcd its own member and cluster ID as
// druid's backup-restore sidecar does (the client Secret, the server
// name <etcd>-local), without hactl; "" when it does not answer.
func druidAsk(t *testing.T, ns, etcd, pod string) (id, clusterID string) {
	t.Helper()
	tc, err := scenario.DruidClientTLS(context.Background(), s.KC, ns, etcd)
	if err != nil {
		t.Fatal(err)
	}
	return askMember(ns, pod, etcd+"-local:2379", clientv3.Config{TLS: tc})
}

// etcd-druid's layout, laid out as druid renders an Etcd (its StatefulSet,
// ConfigMap, Services, member and snapshot Leases, TLS Secrets; no hactl
// label anywhere), real etcd members run by stand-ins for druid's images,
// through the real kubectl: found, probed with the client TLS the
// StatefulSet mounts for the sidecar, each member answering with the ID
// it gives etcd's own client and its Lease names; the Etcd's word and its
// backups shown; every action refused with druid's way, which explain
// prints, and nothing changed. A second cluster whose Etcd still says
// Ready while two of three members are down is cr_status_stale; a third
// whose Etcd records for one member an ID it does not answer with is
// cr_member_mismatch on that member.
func TestDruidThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "druid")
	ctx := context.Background()
	sts, err := s.KC.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noHactlKeys(t, "the StatefulSet", sts.Labels, sts.Annotations)
	var cs status.ClusterStatus
	out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("not a ClusterStatus (exit %d): %v\n%s%s", code, err, out, errOut)
	}
	if code != 0 || !cs.Verdict.FailoverReady || cs.Layout != "etcd-druid" || cs.ManagedBy != "etcd-druid" {
		t.Errorf("exit %d, failover-ready %v (%+v), layout %q, managed by %q\n%s", code, cs.Verdict.FailoverReady, cs.Verdict.Reasons, cs.Layout, cs.ManagedBy, errOut)
	}
	pods := map[string]string{}
	for _, m := range cs.Members {
		id, _ := druidAsk(t, ns, name, m.Name)
		pods[m.Name] = id
		if m.Reachable == nil || !*m.Reachable || id == "" || m.MemberID != id {
			t.Errorf("member %s: reachable %v, ID %q; etcd says %q", m.Name, m.Reachable, m.MemberID, id)
		}
		l, err := s.KC.CoordinationV1().Leases(ns).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := l.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, id+":") {
			t.Errorf("member %s's Lease holder %v does not name its ID %s", m.Name, h, id)
		}
	}
	op := cs.Operator
	if op == nil || op.Err != "" || op.Kind != "Etcd" || op.Available == nil || !*op.Available || op.ReadyMembers != 3 {
		t.Fatalf("the Etcd's word: %+v", op)
	}
	if b := op.Backup; b == nil || b.FullAt == nil || b.Ready == nil || !*b.Ready {
		t.Errorf("its backups: %+v", b)
	}
	table, tableErr, _ := kubectl(t, "hactl", "status", name, "-n", ns)
	for _, want := range []string{"(etcd-druid, owned by etcd-druid)", "Etcd " + name + " says: Ready (Quorate), 3 members ready", "its backups: BackupReady", "full snapshot at revision"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table does not say %q:\n%s%s", want, table, tableErr)
		}
	}

	// --secret names another Secret (as one may for an operator whose
	// objects may not be annotated): the members are dialled with it, a
	// Secret that does not exist is named, and nothing else is used.
	orig, err := s.KC.CoreV1().Secrets(ns).Get(ctx, scenario.DruidClientSecret(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alt := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-alt-client"}, Data: orig.Data}
	if _, err := s.KC.CoreV1().Secrets(ns).Create(ctx, alt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.KC.CoreV1().Secrets(ns).Delete(ctx, alt.Name, metav1.DeleteOptions{}) }()
	if out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "--secret", alt.Name); code != 0 {
		t.Errorf("--secret %s: exit %d\n%s%s", alt.Name, code, out, errOut)
	}
	out, errOut, code = kubectl(t, "hactl", "status", name, "-n", ns, "--secret", "no-such-secret")
	if code != 4 || !strings.Contains(out+errOut, `"no-such-secret"`) || !strings.Contains(out+errOut, "--secret") {
		t.Errorf("--secret no-such-secret: exit %d, want 4 naming it\n%s%s", code, out, errOut)
	}
	for _, text := range []string{out, errOut} {
		if strings.Contains(text, string(orig.Data["tls.key"])) {
			t.Error("a private key appears in the output")
		}
	}

	member := name + "-1"
	out, errOut, _ = kubectl(t, "hactl", "explain", name, member, "-n", ns, "--intent", "replace")
	for _, want := range []string{"member_managed", "kubectl annotate etcd.druid.gardener.cloud " + name, "kubectl delete pvc " + name + "-" + member, "removes member " + pods[member]} {
		if !strings.Contains(out, want) {
			t.Errorf("explain does not say %q:\n%s%s", want, out, errOut)
		}
	}
	uids := map[string]string{}
	for m := range pods {
		p, err := s.KC.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[m] = string(p.UID)
	}
	for _, verb := range [][]string{
		{"replace", name, member},
		{"reseed", name, member},
		{"seed", name, "--generation", "g1"},
		{"restore", name, "--generation", "g1"},
	} {
		out, errOut, code = kubectl(t, append(append([]string{"hactl"}, verb...), "-n", ns, "--yes")...)
		if code != 5 || !strings.Contains(out+errOut, "member_managed") {
			t.Errorf("%s: exit %d, want 5 (refused, member_managed)\n%s%s", verb[0], code, out, errOut)
		}
	}
	// Nothing changed, as the API server and the members tell.
	for m, uid := range uids {
		p, err := s.KC.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
		if err != nil || string(p.UID) != uid || p.DeletionTimestamp != nil {
			t.Errorf("pod %s was touched: %v", m, err)
		}
		if id, _ := druidAsk(t, ns, name, m); id != pods[m] {
			t.Errorf("member %s answers %q, was %q", m, id, pods[m])
		}
	}
	if _, err := s.KC.CoordinationV1().Leases(ns).Get(ctx, "hactl-"+name, metav1.GetOptions{}); err == nil {
		t.Error("a refused action took a lock Lease")
	}

	t.Run("Ready while no quorum answers", func(t *testing.T) {
		name, ns := cluster(t, "druid-cr-stale")
		answering := 0
		var down []string
		for n := range 3 {
			pod := name + "-" + string(rune('0'+n))
			if id, _ := druidAsk(t, ns, name, pod); id != "" {
				answering++
			} else {
				down = append(down, pod)
			}
		}
		if answering != 1 {
			t.Fatalf("%d members answer, want 1", answering)
		}
		want := []string{"cr_status_stale", "quorum_unavailable"}
		for _, d := range down {
			want = append(want, "member_unreachable "+d)
		}
		cs := statusReasons(t, ns, name, want, model.ReasonLeaderMissing, model.ReasonLagUnknown, model.ReasonPodNotReady, model.ReasonClientEndpointsMissing)
		if cs.Verdict.ControlReady || cs.Layout != "etcd-druid" {
			t.Errorf("control-ready %v (no quorum), layout %q", cs.Verdict.ControlReady, cs.Layout)
		}
		for _, r := range cs.Verdict.Reasons {
			if r.Code == string(model.ReasonCRStatusStale) && !strings.Contains(r.Detail, "Etcd "+name+" says Ready") {
				t.Errorf("cr_status_stale: %q", r.Detail)
			}
		}
	})

	t.Run("the Etcd records another ID for one member", func(t *testing.T) {
		name, ns := cluster(t, "druid-member-stale")
		raw, err := s.KC.Discovery().RESTClient().Get().
			AbsPath("/apis/" + scenario.DruidAPIVersion + "/namespaces/" + ns + "/etcds/" + name).DoRaw(ctx)
		if err != nil {
			t.Fatalf("reading Etcd %s: %v", name, err)
		}
		var e struct {
			Status struct {
				Members []struct {
					Name string `json:"name"`
					ID   string `json:"id"`
				} `json:"members"`
			} `json:"status"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		// The member whose entry names another ID than it answers with,
		// asked without hactl.
		var stale, recorded, answers string
		for _, m := range e.Status.Members {
			id, _ := druidAsk(t, ns, name, m.Name)
			if id == "" {
				t.Fatalf("member %s does not answer", m.Name)
			}
			if strings.TrimLeft(m.ID, "0") != id {
				if stale != "" {
					t.Fatalf("the Etcd records other IDs for %s and %s", stale, m.Name)
				}
				stale, recorded, answers = m.Name, strings.TrimLeft(m.ID, "0"), id
			}
		}
		if len(e.Status.Members) != 3 || stale == "" {
			t.Fatalf("no member of the Etcd's %d is recorded with another ID than it answers with: %+v", len(e.Status.Members), e.Status.Members)
		}
		cs := statusReasons(t, ns, name, []string{"cr_member_mismatch " + stale})
		for _, r := range cs.Verdict.Reasons {
			if !strings.Contains(r.Detail, "Etcd "+name) || !strings.Contains(r.Detail, "member ID "+recorded) ||
				!strings.Contains(r.Detail, "answers as "+answers) {
				t.Errorf("cr_member_mismatch %s: %q does not name the Etcd, the recorded ID %s and the answered %s", r.Member, r.Detail, recorded, answers)
			}
		}
		if cs.Layout != "etcd-druid" || !cs.Verdict.ControlReady || cs.Verdict.FailoverReady {
			t.Errorf("layout %q, control-ready %v (a quorate cluster), failover-ready %v (the Etcd's word on a member is stale)",
				cs.Layout, cs.Verdict.ControlReady, cs.Verdict.FailoverReady)
		}
		// druid rebuilds a member by name: its way, which explain hands
		// over, removes the ID the member answers with, not the recorded one.
		out, errOut, code := kubectl(t, "hactl", "explain", name, stale, "-n", ns, "--intent", "replace")
		if !strings.Contains(out, "cr_member_mismatch "+stale) || !strings.Contains(out, "removes member "+answers) ||
			strings.Contains(out, "removes member "+recorded) {
			t.Errorf("explain (exit %d) does not show the mismatch and druid's way removing %s:\n%s%s", code, answers, out, errOut)
		}
	})
}
