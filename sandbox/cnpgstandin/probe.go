package cnpgstandin

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// status computes the /pg/status document from the instance's own
// PostgreSQL with the queries of cnpg's Instance.GetStatus
// (pkg/management/postgres/probes.go): the identity and role, then
// fillStatusFromPrimary or fillStatusFromReplica, the replication slots,
// the archiver, the base backups in progress and (a primary)
// pg_stat_replication. It leaves out LoadedConfigurationHash (no
// cnpg-generated configuration here) and the pending-restart decrease
// check.
func (s *standIn) status(ctx context.Context) (*PostgresqlStatus, error) {
	r := &PostgresqlStatus{
		InstanceManagerVersion: InstanceManagerVersion,
		Pod:                    &statusPod{},
	}
	r.Pod.Metadata.Name = s.pod
	rows, err := s.pg.query(ctx, `SELECT
			(pg_catalog.pg_control_system()).system_identifier,
			NOT pg_catalog.pg_is_in_recovery() as primary,
			EXISTS(SELECT 1 FROM pg_catalog.pg_settings WHERE pending_restart)`)
	if err != nil {
		return r, err
	}
	if len(rows) != 1 || len(rows[0]) != 3 {
		return r, fmt.Errorf("unexpected answer %q", rows)
	}
	r.SystemID, r.IsPrimary, r.PendingRestart = rows[0][0], rows[0][1] == "t", rows[0][2] == "t"
	if r.IsPrimary {
		rows, err = s.pg.query(ctx, `SELECT
			(SELECT COALESCE(last_archived_wal, '') FROM pg_catalog.pg_stat_archiver),
			pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()) as current_wal,
			pg_catalog.pg_current_wal_lsn(),
			(SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()) as timeline_id`)
		if err != nil {
			return r, err
		}
		if len(rows) != 1 || len(rows[0]) != 4 {
			return r, fmt.Errorf("unexpected answer %q", rows)
		}
		r.LastArchivedWAL, r.CurrentWAL, r.CurrentLsn = rows[0][0], rows[0][1], rows[0][2]
		r.TimeLineID, _ = strconv.Atoi(rows[0][3])
	} else {
		rows, err = s.pg.query(ctx, `SELECT
			(SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()),
			COALESCE(pg_catalog.pg_last_wal_receive_lsn()::varchar, ''),
			COALESCE(pg_catalog.pg_last_wal_replay_lsn()::varchar, ''),
			pg_catalog.pg_is_wal_replay_paused(),
			(SELECT COUNT(*) FROM pg_catalog.pg_stat_wal_receiver) > 0`)
		if err != nil {
			return r, err
		}
		if len(rows) != 1 || len(rows[0]) != 5 {
			return r, fmt.Errorf("unexpected answer %q", rows)
		}
		r.TimeLineID, _ = strconv.Atoi(rows[0][0])
		r.ReceivedLsn, r.ReplayLsn, r.ReplayPaused = rows[0][1], rows[0][2], rows[0][3] == "t"
		r.IsWalReceiverActive = rows[0][4] == "t"
		// As cnpg does: replay evaluated after receive may be ahead.
		if lsnLess(r.ReceivedLsn, r.ReplayLsn) {
			r.ReceivedLsn = r.ReplayLsn
		}
	}
	if r.IsPrimary {
		rows, err = s.pg.query(ctx, `SELECT slot_name, coalesce(plugin::text, ''), coalesce(slot_type::text, ''),
			coalesce(datoid::text,''), coalesce(database::text,''), active, coalesce(xmin::text, ''),
			coalesce(catalog_xmin::text, ''), coalesce(restart_lsn::text, ''), coalesce(wal_status::text, ''),
			coalesce(safe_wal_size::text, '') FROM pg_catalog.pg_replication_slots`)
		if err != nil {
			return r, err
		}
		for _, f := range rows {
			if len(f) != 11 {
				continue
			}
			sl := PgReplicationSlot{SlotName: f[0], Plugin: f[1], SlotType: f[2], Datoid: f[3], Database: f[4],
				Active: f[5] == "t", Xmin: f[6], CatalogXmin: f[7], RestartLsn: f[8], WalStatus: f[9]}
			if n, err := strconv.Atoi(f[10]); err == nil {
				sl.SafeWalSize = &n
			}
			r.ReplicationSlotsInfo = append(r.ReplicationSlotsInfo, sl)
		}
	}
	rows, err = s.pg.query(ctx, `SELECT COALESCE(last_archived_wal, ''),
			COALESCE(last_archived_time,'-infinity'), COALESCE(last_failed_wal, ''),
			COALESCE(last_failed_time, '-infinity'),
			COALESCE(last_archived_time,'-infinity') > COALESCE(last_failed_time, '-infinity') AS is_archiving
		FROM pg_catalog.pg_stat_archiver`)
	if err != nil {
		return r, err
	}
	if len(rows) == 1 && len(rows[0]) == 5 {
		r.LastArchivedWAL, r.LastArchivedWALTime, r.LastFailedWAL, r.LastFailedWALTime = rows[0][0], rows[0][1], rows[0][2], rows[0][3]
		r.IsArchivingWAL = rows[0][4] == "t"
	}
	if r.IsPrimary {
		rows, err = s.pg.query(ctx, fmt.Sprintf(`SELECT application_name, coalesce(state, ''),
			coalesce(sent_lsn::text, ''), coalesce(write_lsn::text, ''), coalesce(flush_lsn::text, ''),
			coalesce(replay_lsn::text, ''), coalesce(write_lag, '0'::interval), coalesce(flush_lag, '0'::interval),
			coalesce(replay_lag, '0'::interval), coalesce(sync_state, ''), coalesce(sync_priority, 0)
		FROM pg_catalog.pg_stat_replication
		WHERE application_name ~ '%s' AND usename = '%s'
		ORDER BY application_name`, regexp.QuoteMeta(s.cluster)+"-[0-9]+$", ReplicationUser))
		if err != nil {
			return r, err
		}
		for _, f := range rows {
			if len(f) != 11 {
				continue
			}
			r.ReplicationInfo = append(r.ReplicationInfo, PgStatReplication{
				ApplicationName: f[0], State: f[1], SentLsn: f[2], WriteLsn: f[3], FlushLsn: f[4], ReplayLsn: f[5],
				WriteLag: f[6], FlushLag: f[7], ReplayLag: f[8], SyncState: f[9], SyncPriority: f[10],
			})
		}
	}
	r.InstanceArch = s.arch
	r.ExecutableHash = s.hash
	r.SessionID = s.session
	return r, nil
}

// lsnLess compares two LSNs ("X/Y", hex); an unparsable one is least.
func lsnLess(a, b string) bool {
	x, okx := parseLSN(a)
	y, oky := parseLSN(b)
	if !oky {
		return false
	}
	if !okx {
		return true
	}
	return x < y
}

func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}
