package status

import (
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/model"
)

// The operator's word reads in its own condition's name (cozystack's
// Available, druid's Ready), and druid's backups read with their
// revisions and ages; a resource's words reach the terminal escaped.
func TestOperatorAndBackupLines(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	yes, no := true, false
	full, delta := now.Add(-2*time.Hour), now.Add(-15*time.Second)
	op := &model.OperatorFacts{Kind: "Etcd", Name: "etcd-main", AvailableType: "Ready", Available: &yes, AvailableReason: "Quorate\x1b[2J", ReadyMembers: 3,
		Backup: &model.OperatorBackup{Ready: &no, ReadyReason: "BackupFailed", FullRevision: 120, FullAt: &full, DeltaRevision: 135, DeltaAt: &delta}}
	if got, want := OperatorLine(op), "Etcd etcd-main says: Ready (Quorate^[[2J), 3 members ready"; got != want {
		t.Errorf("operator line %q, want %q", got, want)
	}
	if got, want := BackupLine(op, now), "its backups: not BackupReady (BackupFailed); full snapshot at revision 120, 120m ago; delta snapshot at revision 135, 15s ago"; got != want {
		t.Errorf("backup line %q, want %q", got, want)
	}
	op.Backup = &model.OperatorBackup{Err: "leases is forbidden"}
	if got := BackupLine(op, now); !strings.Contains(got, "no BackupReady condition; snapshot Leases not read: leases is forbidden") {
		t.Errorf("backup line %q", got)
	}
	op.Backup = &model.OperatorBackup{}
	if got := BackupLine(op, now); !strings.Contains(got, "no full snapshot recorded; no delta snapshot recorded") {
		t.Errorf("backup line %q", got)
	}
	cz := &model.OperatorFacts{Kind: "EtcdCluster", Name: "db", Available: &no}
	if got := OperatorLine(cz); got != "EtcdCluster db says: not Available, 0 members ready" {
		t.Errorf("cozystack's line %q", got)
	}
	if BackupLine(cz, now) != "" {
		t.Error("a backup line for an operator that keeps no backups")
	}
	// CloudNativePG's Cluster: its phase and the primary it records, the
	// one it switches to, its Ready condition when false.
	cn := &model.OperatorFacts{Kind: "Cluster", Name: "ex", Status: "Switchover in progress", Primary: "ex-1", TargetPrimary: "ex-2", Available: &no, AvailableType: "Ready", ReadyMembers: 2}
	if got, want := OperatorLine(cn), "Cluster ex says: Switchover in progress, primary ex-1 (switching to ex-2), not Ready, 2 instances ready"; got != want {
		t.Errorf("CloudNativePG's line %q, want %q", got, want)
	}
}
