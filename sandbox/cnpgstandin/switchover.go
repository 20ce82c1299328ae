package cnpgstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reconcile follows the Cluster's status once a second, as cnpg's
// instance manager reconciles its Cluster
// (internal/management/controller/instance_controller.go
// reconcilePrimary, reconcileDesignatedPrimary / the switchover in
// pkg/management/postgres/instance.go, the operator's
// internal/controller/replicas.go reconcileTargetPrimary):
//
//   - targetPrimary names another instance while this one is
//     currentPrimary and primary: shut PostgreSQL down (fast) and wait as
//     "demoted";
//   - demoted and currentPrimary now names another instance: restart as
//     its standby (pg_rewind if it cannot follow);
//   - targetPrimary names this replica and differs from currentPrimary:
//     once the old primary's PostgreSQL is down and this one has replayed
//     all it received, promote, label the pods and write
//     status.currentPrimary;
//   - a replica whose upstream is not currentPrimary: re-point
//     primary_conninfo and reload.
//
// A PostgreSQL that stopped on its own is left stopped (the stand-in
// starts it only at bootstrap and when rejoining).
func (s *standIn) reconcile(ctx context.Context) error {
	c, err := s.getCluster(ctx)
	if err != nil {
		return err
	}
	role, upstream := s.state()
	cur, target := c.currentPrimary, c.targetPrimary
	switch {
	case role == RolePrimary && cur == s.pod && target != "" && target != s.pod:
		logf("switchover to %s requested: shutting PostgreSQL down (fast)", target)
		s.pg.stop(60 * time.Second)
		s.setRole("demoted", target)
		return nil
	case role == "demoted" && cur != "" && cur != s.pod:
		return s.rejoin(ctx, cur)
	case role == RoleReplica && target == s.pod && cur != s.pod && cur != "":
		return s.promote(ctx, cur)
	case role == RoleReplica && cur != "" && cur != s.pod && cur == target && upstream != cur && s.pg.running():
		addr, err := s.addressOf(ctx, cur)
		if err != nil {
			return err
		}
		logf("following the new primary %s (%s)", cur, addr)
		if err := s.pg.configure(addr, s.pod); err != nil {
			return err
		}
		if _, err := s.pg.run(ctx, s.pg.tool("pg_ctl"), "reload", "-D", s.pg.data); err != nil {
			return err
		}
		s.setRole(RoleReplica, cur)
	}
	return nil
}

// rejoin restarts the demoted former primary as a standby of primary.
func (s *standIn) rejoin(ctx context.Context, primary string) error {
	addr, err := s.addressOf(ctx, primary)
	if err != nil {
		return err
	}
	logf("rejoining as a standby of %s (%s)", primary, addr)
	if err := s.pg.configure(addr, s.pod); err != nil {
		return err
	}
	if err := s.pg.start(ctx); err != nil {
		return err
	}
	if !s.waitStreaming(ctx, 20*time.Second) {
		logf("not streaming from %s: pg_rewind", primary)
		s.pg.stop(60 * time.Second)
		pw := s.password(ctx, SuperuserSecret(s.cluster))
		src := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres password=%s sslmode=disable", addr, s.pg.port, pw)
		if _, err := s.pg.run(ctx, s.pg.tool("pg_rewind"), "-D", s.pg.data, "--source-server", src); err != nil {
			return err
		}
		if err := s.pg.configure(addr, s.pod); err != nil {
			return err
		}
		if err := s.pg.start(ctx); err != nil {
			return err
		}
	}
	s.setRole(RoleReplica, primary)
	return s.label(ctx, s.pod, RoleReplica)
}

func (s *standIn) waitStreaming(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		rows, err := s.pg.query(ctx, "SELECT status FROM pg_catalog.pg_stat_wal_receiver")
		if err == nil && len(rows) == 1 && rows[0][0] == "streaming" {
			return true
		}
		if sleep(ctx, 500*time.Millisecond) != nil {
			return false
		}
	}
	return false
}

// promote makes this replica the primary once old's PostgreSQL is down
// and everything received is replayed.
func (s *standIn) promote(ctx context.Context, old string) error {
	oldAddr, err := s.addressOf(ctx, old)
	if err != nil {
		return err
	}
	// The old primary's PostgreSQL must be down: pg_isready answers "no
	// response" (2).
	if code := isReadyAt(ctx, s.pg, oldAddr); code != 2 {
		logf("switchover: waiting for %s to shut down (pg_isready %d)", old, code)
		return nil
	}
	rows, err := s.pg.query(ctx, `SELECT (SELECT COUNT(*) FROM pg_catalog.pg_stat_wal_receiver),
		COALESCE(pg_catalog.pg_last_wal_receive_lsn()::text, ''), COALESCE(pg_catalog.pg_last_wal_replay_lsn()::text, '')`)
	if err != nil {
		return err
	}
	if len(rows) != 1 || rows[0][0] != "0" || lsnLess(rows[0][2], rows[0][1]) {
		logf("switchover: waiting for the WAL receiver to end and replay to catch up (%q)", rows)
		return nil
	}
	logf("promoting (received and replayed up to %s)", rows[0][1])
	if _, err := s.pg.run(ctx, s.pg.tool("pg_ctl"), "promote", "-w", "-D", s.pg.data); err != nil {
		return err
	}
	if err := s.pg.configure("", s.pod); err != nil {
		return err
	}
	if _, err := s.pg.run(ctx, s.pg.tool("pg_ctl"), "reload", "-D", s.pg.data); err != nil {
		return err
	}
	s.setRole(RolePrimary, "")
	if err := s.label(ctx, s.pod, RolePrimary); err != nil {
		return err
	}
	if err := s.label(ctx, old, RoleReplica); err != nil {
		logf("labelling %s: %v", old, err)
	}
	tl := 0
	if rows, err := s.pg.query(ctx, "SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()"); err == nil && len(rows) == 1 {
		tl, _ = strconv.Atoi(rows[0][0])
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	st := map[string]any{
		"currentPrimary":          s.pod,
		"currentPrimaryTimestamp": now,
		"phase":                   PhaseHealthy,
		"phaseReason":             nil,
	}
	if tl > 0 {
		st["timelineID"] = tl
	}
	patch, _ := json.Marshal(map[string]any{"status": st})
	_, err = s.dyn.Resource(ClusterGVR).Namespace(s.ns).Patch(ctx, s.cluster, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing the Cluster's status: %w", err)
	}
	logf("switchover done: %s is the primary", s.pod)
	return nil
}

func isReadyAt(ctx context.Context, p *postgres, host string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := p.run(ctx, p.tool("pg_isready"), "-h", host, "-p", strconv.Itoa(p.port), "-t", "3")
	if err == nil {
		return 0
	}
	_ = out
	return exitCode(err)
}
