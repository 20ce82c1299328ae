package source

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
)

// What etcd-druid (v0.37) writes (gardener/etcd-druid api/core/v1alpha1
// etcd.go and helper.go, internal/component/statefulset/builder.go,
// internal/component/{memberlease,snapshotlease}; the lease formats from
// gardener/etcd-backup-restore pkg/health/heartbeat/heartbeat.go).
const (
	DruidGroup   = "druid.gardener.cloud"
	DruidVersion = "v1alpha1"
	// DruidLayout names the layout in ClusterFacts.Layout.
	DruidLayout = "etcd-druid"
	// LabelDruidManagedBy=DruidManagedBy and LabelDruidPartOf=<etcd> are
	// on every object druid creates for an Etcd.
	LabelDruidManagedBy = "app.kubernetes.io/managed-by"
	DruidManagedBy      = "etcd-druid"
	LabelDruidPartOf    = "app.kubernetes.io/part-of"
	// DruidLeaseSelector selects the Leases druid creates (its member and
	// snapshot Leases among them).
	DruidLeaseSelector = LabelDruidManagedBy + "=" + DruidManagedBy
	// druidDisableProtection is the Etcd annotation that lets a user
	// delete what druid's component-protection webhook guards (the
	// members' claims among them).
	druidDisableProtection = DruidGroup + "/disable-etcd-component-protection"
)

// DruidPath is the API path of the Etcds in namespace ns ("" for every
// namespace).
func DruidPath(ns string) string {
	if ns == "" {
		return "/apis/" + DruidGroup + "/" + DruidVersion + "/etcds"
	}
	return "/apis/" + DruidGroup + "/" + DruidVersion + "/namespaces/" + ns + "/etcds"
}

// DruidEtcd is the part of an etcd-druid Etcd hactl reads.
type DruidEtcd struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		MemberNamePrefix *string `json:"memberNamePrefix,omitempty"`
		Backup           struct {
			Store *json.RawMessage `json:"store,omitempty"`
		} `json:"backup"`
	} `json:"spec"`
	Status struct {
		Conditions []DruidCondition `json:"conditions,omitempty"`
		Members    []struct {
			Name   string  `json:"name"`
			ID     *string `json:"id,omitempty"`
			Role   *string `json:"role,omitempty"`
			Status string  `json:"status"`
			Reason string  `json:"reason"`
		} `json:"members,omitempty"`
		ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	} `json:"status"`
}

// DruidCondition is one of an Etcd's conditions (druid's own type: its
// status may also be Progressing or ConditionCheckError).
type DruidCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Druid are etcd-druid's objects one read holds: the Etcds, and the
// Leases druid made for them (each member's, renewed by its
// backup-restore sidecar, and the snapshot Leases). Err says why the
// Etcds could not be read, LeasesErr why the Leases could not; the
// clusters are then shown from their StatefulSets alone, and nothing is
// held against the operator's word.
type Druid struct {
	Etcds     []DruidEtcd
	Leases    []coordinationv1.Lease
	Err       error
	LeasesErr error
}

// DecodeDruidEtcds decodes a list of Etcds as the API server returns it.
func DecodeDruidEtcds(raw []byte) ([]DruidEtcd, error) {
	var l struct {
		Items []DruidEtcd `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decoding etcds.%s: %w", DruidGroup, err)
	}
	return l.Items, nil
}

// IsDruidStatefulSet reports whether sts is controlled by an etcd-druid
// Etcd.
func IsDruidStatefulSet(sts *appsv1.StatefulSet) bool {
	c := metav1.GetControllerOfNoCopy(sts)
	return c != nil && c.Kind == "Etcd" && strings.HasPrefix(c.APIVersion, DruidGroup+"/")
}

// HasDruidStatefulSets reports whether sts hold an Etcd's StatefulSet.
func HasDruidStatefulSets(sts []appsv1.StatefulSet) bool {
	for i := range sts {
		if IsDruidStatefulSet(&sts[i]) {
			return true
		}
	}
	return false
}

// druidOperator is etcd-druid for a cluster whose members' claims are
// <claim>-<member>: druid owns the StatefulSet, and a member's
// backup-restore sidecar rebuilds it when it restarts on an empty
// volume while the cluster still lists it (asked of the cluster, else
// its member Lease's holder): it removes the member listed under its
// name and adds it back as a learner (etcd-backup-restore
// pkg/initializer restoreInMultiNode, pkg/member WasMemberInCluster).
// Druid's component-protection webhook denies deleting the claim until
// the Etcd is annotated.
func druidOperator(claim string) *model.Manager {
	return &model.Manager{
		Name: "etcd-druid",
		Runbook: []string{
			"kubectl get lease {memberName} -n {namespace} -o jsonpath='{.spec.holderIdentity}': while its sidecar runs it begins with {memberID}, the member you mean",
			"kubectl annotate etcd.druid.gardener.cloud {cluster} -n {namespace} " + druidDisableProtection + "= (druid's webhook denies deleting the member's claim otherwise)",
			"kubectl delete pvc " + claim + "-{member} -n {namespace} --wait=false",
			"kubectl delete pod {member} -n {namespace}: the StatefulSet recreates it on a new, empty volume; its backup-restore sidecar, finding {memberName} in the member list, removes member {memberID} and adds it back as a learner, which it promotes once caught up",
			"kubectl annotate etcd.druid.gardener.cloud {cluster} -n {namespace} " + druidDisableProtection + "- (protection back on)",
			"kubectl hactl status {cluster} -n {namespace}: wait until {member} is a voter that has caught up",
		},
	}
}

// DruidClusters is etcd-druid's layout: an Etcd's members are the
// ordinals of the StatefulSet it controls (named like it), with claims
// <template>-<pod>. It is found by its StatefulSet's controller, so it
// shows with no access to druid's resources; with it, the Etcd's status
// and the member and snapshot Leases are read beside (Operator). The
// client TLS Secrets are the ones the StatefulSet mounts for the
// backup-restore sidecar (volumes etcd-ca and etcd-client-tls, from the
// Etcd's spec.etcd.clientUrlTls), and the server name the sidecar dials,
// <etcd>-local. Druid owns the members: hactl changes none of them
// (ManagedBy, with druid's way).
type DruidClusters struct{}

// Workloads implements Layout.
func (DruidClusters) Workloads(o Objects, detect Detect) []Workload {
	var out []Workload
	for i := range o.StatefulSets {
		sts := &o.StatefulSets[i]
		if !IsDruidStatefulSet(sts) {
			continue
		}
		t := PodTemplate(sts)
		eng, ok := detect(sts.Labels, t)
		if !ok {
			continue
		}
		w := StatefulSetWorkload(sts, eng, t)
		w.Layout = DruidLayout
		w.ManagedBy = druidOperator(dataClaim(sts))
		w.ServerName = sts.Name + "-local"
		w.TLSSecret, w.TLSCASecret, w.TLSCAKey = druidTLS(sts)
		if w.TLSSecret != "" || w.TLSCASecret != "" {
			w.TLSSecretFrom = "the Etcd's spec.etcd.clientUrlTls, as StatefulSet " + sts.Name + " mounts it"
		}
		owner := metav1.GetControllerOfNoCopy(sts).Name
		w.Operator = druidFacts(owner, sts, o.Druid)
		out = append(out, w)
	}
	return out
}

// druidTLS are the client TLS Secrets the backup-restore sidecar dials
// its member with: the key pair of volume etcd-client-tls, the CA of
// volume etcd-ca under the key its --cacert names ("" when the cluster
// serves plain HTTP: no such volumes).
func druidTLS(sts *appsv1.StatefulSet) (secret, ca, caKey string) {
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		switch v.Name {
		case "etcd-client-tls":
			secret = v.Secret.SecretName
		case "etcd-ca":
			ca = v.Secret.SecretName
		}
	}
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if f, ok := strings.CutPrefix(a, "--cacert=/var/etcd/ssl/ca/"); ok && c.Name == "backup-restore" && f != "" {
				caKey = path.Base(f)
			}
		}
	}
	if caKey == "ca.crt" {
		caKey = ""
	}
	return secret, ca, caKey
}

// druidFacts are druid's word on Etcd name (its StatefulSet sts): the
// Etcd's Ready condition and status.members, the member Leases' IDs
// where the status has none, and the snapshot Leases; or why they
// could not be read.
func druidFacts(name string, sts *appsv1.StatefulSet, d *Druid) *model.OperatorFacts {
	f := &model.OperatorFacts{Kind: "Etcd", Name: name, AvailableType: "Ready", RemovesByName: true}
	var e *DruidEtcd
	if d != nil && d.Err == nil {
		for i := range d.Etcds {
			if d.Etcds[i].Namespace == sts.Namespace && d.Etcds[i].Name == name {
				e = &d.Etcds[i]
			}
		}
	}
	switch {
	case d == nil:
		f.Err = "the operator's resources were not read"
		return f
	case d.Err != nil:
		f.Err = d.Err.Error()
		return f
	case e == nil:
		f.Err = fmt.Sprintf("no Etcd %s: its StatefulSet names it as its controller, but it does not exist", name)
		return f
	}
	if c := druidCondition(e.Status.Conditions, "Ready"); c != nil {
		ok := c.Status == "True"
		f.Available, f.AvailableReason, f.AvailableDetail = &ok, printable(c.Reason), printable(c.Message)
	}
	prefix := ""
	if e.Spec.MemberNamePrefix != nil && *e.Spec.MemberNamePrefix != "" {
		prefix = *e.Spec.MemberNamePrefix + "-"
	}
	f.MemberPrefix, f.Deleting = printable(prefix), e.DeletionTimestamp != nil
	leases := map[string]*coordinationv1.Lease{}
	for i := range d.Leases {
		if l := &d.Leases[i]; l.Namespace == sts.Namespace {
			leases[l.Name] = l
		}
	}
	for _, m := range e.Status.Members {
		pod := strings.TrimPrefix(m.Name, prefix)
		if m.Status == "Ready" {
			f.ReadyMembers++
		}
		rec := model.OperatorMember{Name: printable(pod), Voter: m.Role != nil && *m.Role != ""}
		if m.ID != nil {
			rec.MemberID = hexID(*m.ID)
		} else if l := leases[m.Name]; l != nil {
			rec.MemberID, _ = druidHolder(l)
		}
		f.Members = append(f.Members, rec)
	}
	if e.Spec.Backup.Store != nil {
		f.Backup = druidBackup(e, leases, d.LeasesErr)
	}
	return f
}

// druidHolder is the member ID (hex, as etcd spells it) and role a
// member Lease's holder names: "<id>:<role>" or "<id>:<cluster>:<role>";
// "" when it names none yet.
func druidHolder(l *coordinationv1.Lease) (id, role string) {
	if l.Spec.HolderIdentity == nil {
		return "", ""
	}
	parts := strings.Split(*l.Spec.HolderIdentity, ":")
	switch len(parts) {
	case 2, 3:
		return hexID(parts[0]), parts[len(parts)-1]
	}
	return "", ""
}

// druidBackup is what Etcd e's snapshot Leases and BackupReady say: the
// holder of each is the revision the snapshot holds (decimal), its
// renew time when it was taken (full) or last renewed (delta).
func druidBackup(e *DruidEtcd, leases map[string]*coordinationv1.Lease, leasesErr error) *model.OperatorBackup {
	b := &model.OperatorBackup{}
	if c := druidCondition(e.Status.Conditions, "BackupReady"); c != nil {
		ok := c.Status == "True"
		b.Ready, b.ReadyReason = &ok, printable(c.Reason)
	}
	if leasesErr != nil {
		b.Err = leasesErr.Error()
		return b
	}
	read := func(name string) (int64, *time.Time) {
		l := leases[name]
		if l == nil {
			return 0, nil
		}
		var rev int64
		if l.Spec.HolderIdentity != nil {
			rev, _ = strconv.ParseInt(*l.Spec.HolderIdentity, 10, 64)
		}
		if l.Spec.RenewTime == nil {
			return rev, nil
		}
		at := l.Spec.RenewTime.Time
		return rev, &at
	}
	b.FullRevision, b.FullAt = read(e.Name + "-full-snap")
	b.DeltaRevision, b.DeltaAt = read(e.Name + "-delta-snap")
	return b
}

// druidCondition is condition typ among cs, nil when absent.
func druidCondition(cs []DruidCondition, typ string) *DruidCondition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}
