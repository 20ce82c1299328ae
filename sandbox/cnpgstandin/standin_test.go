package cnpgstandin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"testing"
)

// The JSON names of cnpg's structs, copied from their struct tags in
// cloudnative-pg @a95a534 (v1.30.0), pkg/postgres/status.go:
// PostgresqlStatus, PgStatReplication, PgReplicationSlot,
// PgStatBasebackup.
var (
	cnpgStatusFields = []string{
		"currentLsn", "receivedLsn", "replayLsn", "systemID", "isPrimary", "replayPaused",
		"pendingRestart", "pendingRestartForDecrease", "isWalReceiverActive", "isPgRewindRunning",
		"mightBeUnavailable", "isArchivingWAL", "node", "pod", "mightBeUnavailableMaskedError",
		"loadedConfigurationHash", "lastArchivedWAL", "lastArchivedWALTime", "lastFailedWAL",
		"lastFailedWALTime", "currentWAL", "readyWalFiles", "timeLineID", "replicationInfo",
		"replicationSlotsInfo", "pgStatBasebackupsInfo", "executableHash", "instanceManagerVersion",
		"instanceArch", "isInstanceManagerUpgrading", "sessionID", "isPodReady",
	}
	cnpgReplicationFields = []string{
		"applicationName", "state", "receivedLsn", "writeLsn", "flushLsn", "replayLsn",
		"writeLag", "flushLag", "replayLag", "syncState", "syncPriority",
	}
	cnpgSlotFields = []string{
		"slotName", "plugin", "slotType", "datoid", "database", "xmin", "catalogXmin",
		"restartLsn", "walStatus", "safeWalSize", "active",
	}
	cnpgBasebackupFields = []string{
		"usename", "application_name", "backend_start", "phase", "backup_total", "backup_streamed",
		"backup_total_pretty", "backup_streamed_pretty", "tablespaces_total", "tablespaces_streamed",
	}
	// Those without omitempty: always present.
	cnpgStatusAlways = []string{
		"systemID", "isPrimary", "replayPaused", "pendingRestart", "pendingRestartForDecrease",
		"isWalReceiverActive", "isPgRewindRunning", "mightBeUnavailable", "node", "pod",
		"executableHash", "instanceManagerVersion", "instanceArch", "isInstanceManagerUpgrading",
		"sessionID", "isPodReady",
	}
)

func jsonNames(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		tag := rt.Field(i).Tag.Get("json")
		name := tag
		for j := range tag {
			if tag[j] == ',' {
				name = tag[:j]
				break
			}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestJSONNamesAreCNPGs(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{PostgresqlStatus{}, cnpgStatusFields},
		{PgStatReplication{}, cnpgReplicationFields},
		{PgReplicationSlot{}, cnpgSlotFields},
		{PgStatBasebackup{}, cnpgBasebackupFields},
	} {
		got := jsonNames(t, tc.v)
		if !reflect.DeepEqual(got, sorted(tc.want)) {
			t.Errorf("%T: json names %v, cnpg's %v", tc.v, got, sorted(tc.want))
		}
	}
}

func TestStatusDocument(t *testing.T) {
	st := PostgresqlStatus{
		CurrentLsn: "0/3000060", SystemID: "7300000000000000001", IsPrimary: true, TimeLineID: 1,
		InstanceManagerVersion: InstanceManagerVersion, Pod: &statusPod{},
		ReplicationInfo: []PgStatReplication{{ApplicationName: "c-2", State: "streaming", SentLsn: "0/3000060"}},
	}
	st.Pod.Metadata.Name = "c-1"
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range cnpgStatusAlways {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing from %s", k, b)
		}
	}
	for _, k := range []string{"receivedLsn", "replayLsn", "currentWAL", "replicationSlotsInfo"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present though empty (omitempty in cnpg): %s", k, b)
		}
	}
	if m["currentLsn"] != "0/3000060" || m["timeLineID"] != float64(1) {
		t.Errorf("document %s", b)
	}
	ri := m["replicationInfo"].([]any)[0].(map[string]any)
	if ri["receivedLsn"] != "0/3000060" || ri["applicationName"] != "c-2" {
		t.Errorf("replicationInfo %v: sent_lsn is receivedLsn", ri)
	}
	if pod := m["pod"].(map[string]any); pod["metadata"].(map[string]any)["name"] != "c-1" {
		t.Errorf("pod %v", pod)
	}
}

func TestPgStatusWhenPostgresIsDown(t *testing.T) {
	s := &standIn{pod: "c-1", cluster: "c", pg: &postgres{bin: "/nonexistent", sock: t.TempDir(), port: 5432}}
	rec := httptest.NewRecorder()
	s.mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/pg/status", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", rec.Code)
	}
	if got, want := rec.Body.String(), errNotRunning.Error()+"\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	rec = httptest.NewRecorder()
	s.mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != "instance is not ready yet\n" {
		t.Errorf("/readyz before bootstrap: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	s.mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "OK" {
		t.Errorf("/healthz: %d %q", rec.Code, rec.Body.String())
	}
}

func TestMemberAddress(t *testing.T) {
	for in, want := range map[string]string{"10.244.3.2": "127.3.1.2", "127.3.1.2": "127.3.1.2"} {
		if got, err := MemberAddress(in); err != nil || got != want {
			t.Errorf("MemberAddress(%s) = %s, %v", in, got, err)
		}
	}
	if _, err := MemberAddress("10.0.0.1"); err == nil {
		t.Error("10.0.0.1 mapped")
	}
}

func TestLSNLess(t *testing.T) {
	if !lsnLess("0/3000060", "0/3000061") || lsnLess("1/0", "0/FFFFFFFF") || !lsnLess("", "0/1") {
		t.Error("lsnLess")
	}
}
