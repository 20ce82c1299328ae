package scenario

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/fault"
)

// PatroniBinary is the Patroni the runner runs for the Patroni template's
// command (Debian's patroni package).
const PatroniBinary = "/usr/bin/patroni"

// KubeContext is the context of the kubeconfig the sandbox's runner gives
// pods (runner.KubeContext, which a runner test checks this against):
// the Patroni template's PATRONI_KUBERNETES_CONTEXT.
const KubeContext = "hactl-sandbox"

// Patroni's REST port and the DCS timing of the template (bootstrap.dcs).
const (
	patroniPort     = 8008
	patroniTTL      = 30 * time.Second
	patroniLoopWait = 10 * time.Second
	// maximumLagOnFailover is the template's maximum_lag_on_failover.
	maximumLagOnFailover = 1 << 20
)

// PostgresUser returns the host's postgres user (uid and gid, which the
// Patroni template's securityContext names: PostgreSQL refuses to run as
// root) and the bin dir of the newest PostgreSQL installed under
// /usr/lib/postgresql (Debian's layout). It fails, saying what to
// install, when Patroni or PostgreSQL is missing.
func PostgresUser() (uid, gid int64, binDir string, err error) {
	if _, err := os.Stat(PatroniBinary); err != nil {
		return 0, 0, "", fmt.Errorf("patroni is not installed (%v): apt-get install patroni postgresql-15", err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, "", fmt.Errorf("no postgres user (%v): apt-get install postgresql-15", err)
	}
	if uid, err = strconv.ParseInt(u.Uid, 10, 64); err != nil {
		return 0, 0, "", err
	}
	if gid, err = strconv.ParseInt(u.Gid, 10, 64); err != nil {
		return 0, 0, "", err
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	best := -1
	for _, f := range found {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(f))))
		if err == nil && v > best {
			best, binDir = v, filepath.Dir(f)
		}
	}
	if binDir == "" {
		return 0, 0, "", errors.New("no PostgreSQL under /usr/lib/postgresql: apt-get install postgresql-15")
	}
	return uid, gid, binDir, nil
}

// patroniParams are the Patroni template's parameters for cluster name.
func patroniParams(env Env, name string) (Params, error) {
	uid, gid, bin, err := PostgresUser()
	if err != nil {
		return Params{}, err
	}
	return Params{
		Name: name, Namespace: env.Namespace, Replicas: 3, PDB: true,
		RunAsUser: uid, RunAsGroup: gid, PGBinDir: bin, KubeContext: KubeContext,
	}, nil
}

// PatroniStatus is what GET /patroni answers (the fields scenarios use).
type PatroniStatus struct {
	State    string `json:"state"`
	Role     string `json:"role"`
	Timeline int64  `json:"timeline"`
	XLog     struct {
		Location         *int64 `json:"location"`
		ReceivedLocation *int64 `json:"received_location"`
		ReplayedLocation *int64 `json:"replayed_location"`
		Paused           bool   `json:"paused"`
	} `json:"xlog"`
	Replication []struct {
		ApplicationName string `json:"application_name"`
		State           string `json:"state"`
		SyncState       string `json:"sync_state"`
	} `json:"replication"`
	Pause       bool `json:"pause"`
	SyncStandby bool `json:"sync_standby"`
}

// primary reports whether the member runs as a writable primary.
func (s PatroniStatus) primary() bool {
	return (s.Role == "master" || s.Role == "primary") && s.State == "running"
}

// streaming reports whether the primary lists member as streaming.
func (s PatroniStatus) streaming(member string) bool {
	for _, r := range s.Replication {
		if r.ApplicationName == member && r.State == "streaming" {
			return true
		}
	}
	return false
}

var patroniHTTP = &http.Client{Timeout: 2 * time.Second}

// patroniClients caches, by namespace/pod, the client and scheme of a
// member's REST API (see patroniClient).
var patroniClients sync.Map

type patroniClientEntry struct {
	client *http.Client
	scheme string
}

// PatroniTLS returns the TLS configuration that reaches the Patroni REST
// API of pod in ns when it serves HTTPS as Crunchy PGO configures it, and
// nil for any other pod (plain HTTP): the roots of its instance Secret
// <instance>-certs (patroni.ca-roots), its pod DNS name
// <pod>.<cluster>-pods as server name (the certificate names no IP), and
// its patroni.crt-combined (key and certificate) as client certificate,
// as PGO's patronictl presents it (ctl.certfile): Patroni with
// verify_client optional refuses unsafe requests (PATCH, POST) without
// one.
func PatroniTLS(ctx context.Context, kc kubernetes.Interface, ns, pod string) (*tls.Config, error) {
	p, err := kc.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	inst, cluster := p.Labels[PGOInstanceLabel], p.Labels[PGOClusterLabel]
	if inst == "" || cluster == "" {
		return nil, nil
	}
	sec, err := kc.CoreV1().Secrets(ns).Get(ctx, PGOInstanceCerts(inst), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(sec.Data[PGOCARootsKey]) {
		return nil, fmt.Errorf("Secret %s: no certificate in %s", sec.Name, PGOCARootsKey)
	}
	combined := sec.Data[PGOCertCombined]
	cert, err := tls.X509KeyPair(combined, combined)
	if err != nil {
		return nil, fmt.Errorf("Secret %s, %s: %w", sec.Name, PGOCertCombined, err)
	}
	return &tls.Config{RootCAs: roots, ServerName: pod + "." + PGOPodService(cluster),
		Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// patroniClient returns the client and scheme for pod's REST API: HTTPS
// with PatroniTLS for a PGO instance, else plain HTTP.
func patroniClient(ctx context.Context, env Env, pod string) (*http.Client, string, error) {
	key := env.Namespace + "/" + pod
	if e, ok := patroniClients.Load(key); ok {
		e := e.(patroniClientEntry)
		return e.client, e.scheme, nil
	}
	if env.Kube == nil {
		return patroniHTTP, "http", nil
	}
	cfg, err := PatroniTLS(ctx, env.Kube, env.Namespace, pod)
	if err != nil {
		return nil, "", err
	}
	e := patroniClientEntry{client: patroniHTTP, scheme: "http"}
	if cfg != nil {
		e = patroniClientEntry{scheme: "https", client: &http.Client{Timeout: patroniHTTP.Timeout,
			Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}}
	}
	patroniClients.Store(key, e)
	return e.client, e.scheme, nil
}

// forgetPatroniClient drops pod's cached client after a failed request:
// a pod of the same name may since belong to another cluster.
func forgetPatroniClient(env Env, pod string) { patroniClients.Delete(env.Namespace + "/" + pod) }

// patroniURL is the URL of path on the Patroni REST API of pod (scheme
// http or https), through its own address.
func patroniURL(env Env, pod, scheme, path string) (string, error) {
	a, err := env.Address(pod)
	if err != nil {
		return "", err
	}
	return scheme + "://" + a + ":" + strconv.Itoa(patroniPort) + path, nil
}

// GetPatroni asks the member of pod for its /patroni status, through its
// own address (over HTTPS with PatroniTLS for a PGO instance).
func GetPatroni(ctx context.Context, env Env, pod string) (PatroniStatus, error) {
	var st PatroniStatus
	client, scheme, err := patroniClient(ctx, env, pod)
	if err != nil {
		return st, err
	}
	u, err := patroniURL(env, pod, scheme, "/patroni")
	if err != nil {
		return st, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return st, err
	}
	resp, err := client.Do(req)
	if err != nil {
		forgetPatroniClient(env, pod)
		return st, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w: %s", u, err, b)
	}
	return st, nil
}

// setPause turns maintenance mode on or off the way patronictl does
// (PATCH /config {"pause": true} or {"pause": null}) through member pod,
// then waits until every member of cluster reports it. Over HTTPS (a PGO
// instance) it presents the instance's client certificate.
func setPause(ctx context.Context, env Env, cluster, pod string, on bool, members ...string) error {
	client, scheme, err := patroniClient(ctx, env, pod)
	if err != nil {
		return err
	}
	u, err := patroniURL(env, pod, scheme, "/config")
	if err != nil {
		return err
	}
	body := `{"pause": null}`
	if on {
		body = `{"pause": true}`
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(RESTUser, RESTPassword)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("PATCH %s: %s: %s", u, resp.Status, b)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(poll):
		}
	}
	env.Logf("scenario %s: maintenance mode %v (PATCH /config on %s)", cluster, on, pod)
	return waitPatroni(ctx, env, cluster, fmt.Sprintf("pause %v on every member", on), members, func(sts map[string]PatroniStatus) bool {
		for _, m := range members {
			if sts[m].Pause != on {
				return false
			}
		}
		return true
	})
}

// waitPatroni polls the /patroni status of members until ok holds for
// the answers (members that do not answer are missing from the map).
func waitPatroni(ctx context.Context, env Env, cluster, what string, members []string, ok func(map[string]PatroniStatus) bool) error {
	var last map[string]PatroniStatus
	var lastErr error
	for {
		sts := map[string]PatroniStatus{}
		lastErr = nil
		for _, m := range members {
			st, err := GetPatroni(ctx, env, m)
			if err != nil {
				lastErr = err
				continue
			}
			sts[m] = st
		}
		last = sts
		if ok(sts) {
			return nil
		}
		select {
		case <-ctx.Done():
			b, _ := json.Marshal(last)
			return fmt.Errorf("waiting for %s in %s (last: %s; %v): %w", what, cluster, b, lastErr, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// members lists the member (pod) names of a cluster of n.
func members(cluster string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = MemberName(cluster, i)
	}
	return out
}

// leaderOf returns the one member answering as a running primary.
func leaderOf(sts map[string]PatroniStatus) (string, bool) {
	var leaders []string
	for m, st := range sts {
		if st.primary() {
			leaders = append(leaders, m)
		}
	}
	if len(leaders) != 1 {
		return "", false
	}
	return leaders[0], true
}

// formPatroni applies the Patroni template with p and waits until one
// member is a running primary and every other one a running replica
// streaming from it (from the members' own /patroni answers), and every
// pod is Ready. It returns the leader and the replicas, sorted.
func formPatroni(ctx context.Context, env Env, p Params) (leader string, replicas []string, err error) {
	begin := time.Now()
	if err := apply(ctx, env, Patroni, p); err != nil {
		return "", nil, err
	}
	return waitFormed(ctx, env, p.Name, p.Replicas, begin)
}

// waitFormed waits until the Patroni cluster of the StatefulSet cluster
// (of n members) has formed, as formPatroni describes, and returns the
// leader and the replicas, sorted. begin is when its setup began.
func waitFormed(ctx context.Context, env Env, cluster string, n int, begin time.Time) (leader string, replicas []string, err error) {
	all := members(cluster, n)
	err = waitPatroni(ctx, env, cluster, "a primary with every replica streaming", all, func(sts map[string]PatroniStatus) bool {
		l, ok := leaderOf(sts)
		if !ok {
			return false
		}
		for _, m := range all {
			if m == l {
				continue
			}
			if st, ok := sts[m]; !ok || st.Role != "replica" || st.State != "running" || !sts[l].streaming(m) {
				return false
			}
		}
		leader = l
		return true
	})
	if err != nil {
		return "", nil, err
	}
	if err := waitRollout(ctx, env, cluster); err != nil {
		return "", nil, err
	}
	for _, m := range all {
		if m != leader {
			replicas = append(replicas, m)
		}
	}
	sort.Strings(replicas)
	env.Logf("scenario %s: Patroni cluster formed in %s: leader %s, replicas %s streaming", cluster,
		time.Since(begin).Round(100*time.Millisecond), leader, strings.Join(replicas, ", "))
	return leader, replicas, nil
}

// psql runs SQL as the superuser on the member of pod, over TCP to its
// own address (in the container, as `kubectl exec … psql` would): with
// the Patroni template's PATRONI_* variables, else the Zalando
// operator's (PGUSER_SUPERUSER, PGPASSWORD_SUPERUSER and PGVERSION, whose
// bin dir Spilo uses), else as postgres with PATRONI_SUPERUSER_PASSWORD
// and the psql on PATH (a PGO instance).
func psql(ctx context.Context, env Env, pod, sql string) (string, error) {
	if env.Exec == nil {
		return "", errors.New("this sandbox cannot exec in pods")
	}
	return env.Exec(ctx, pod, []string{"sh", "-c",
		`bin="${PATRONI_POSTGRESQL_BIN_DIR:-/usr/lib/postgresql/$PGVERSION/bin}"; ` +
			`if [ -z "$PATRONI_POSTGRESQL_BIN_DIR$PGVERSION" ]; then bin=$(dirname "$(command -v psql)"); fi; ` +
			`PGPASSWORD="${PATRONI_SUPERUSER_PASSWORD:-$PGPASSWORD_SUPERUSER}" PGCONNECT_TIMEOUT=5 ` +
			`exec "$bin/psql" ` +
			`-h 127.0.0.1 -p 5432 -U "${PATRONI_SUPERUSER_USERNAME:-${PGUSER_SUPERUSER:-postgres}}" -d postgres -v ON_ERROR_STOP=1 -qAtc "$0"`, sql})
}

// writeWAL writes about mib MiB of WAL on the primary pod (rows of a
// table of its own).
func writeWAL(ctx context.Context, env Env, pod, table string, mib int) error {
	sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %[1]s (id bigint, pad text); "+
		"INSERT INTO %[1]s SELECT g, repeat('x', 1000) FROM generate_series(1, %[2]d) g;", table, mib*1000)
	_, err := psql(ctx, env, pod, sql)
	return err
}

// leaderLock reads the <scope>-leader ConfigMap's annotations.
func leaderLock(ctx context.Context, env Env, scope string) (map[string]string, error) {
	cm, err := env.Kube.CoreV1().ConfigMaps(env.Namespace).Get(ctx, scope+"-leader", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cm.Annotations, nil
}

// endpointsLeaderLock reads the annotations of the Endpoints <scope>,
// where Patroni keeps the leader lock with use_endpoints.
func endpointsLeaderLock(ctx context.Context, env Env, scope string) (map[string]string, error) {
	ep, err := env.Kube.CoreV1().Endpoints(env.Namespace).Get(ctx, scope, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ep.Annotations, nil
}

// lockStale reports whether the leader lock's renewTime + ttl is past.
func lockStale(ann map[string]string, now time.Time) bool {
	ttl, err := strconv.Atoi(ann["ttl"])
	if err != nil {
		return false
	}
	renew, err := time.Parse("2006-01-02T15:04:05.999999-07:00", ann["renewTime"])
	if err != nil {
		return false
	}
	return renew.Add(time.Duration(ttl) * time.Second).Before(now)
}

func init() {
	register(&Scenario{
		Name:  "pg-healthy",
		Shape: Patroni,
		Summary: "3 PostgreSQL members under Patroni (Kubernetes DCS: ConfigMaps), one per node, PodDisruptionBudget: " +
			"a leader and 2 replicas streaming from it",
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, _, _, err := formPG(ctx, env, s, nil, false)
			return err
		},
	})
	register(&Scenario{
		Name:    "pg-paused",
		Shape:   Patroni,
		Summary: "a healthy Patroni cluster in maintenance mode (PATCH /config {\"pause\": true}, as patronictl pause does): no automatic failover",
		Reasons: []model.ReasonCode{model.ReasonMaintenancePaused},
		run: func(ctx context.Context, env Env, s *Scenario) error {
			_, _, _, err := formPG(ctx, env, s, nil, true)
			return err
		},
	})
	register(&Scenario{
		Name:  "pg-replica-lagging",
		Shape: Patroni,
		Summary: "a healthy Patroni cluster whose first replica's WAL replay is stalled (its startup process SIGSTOPped) " +
			"while the primary writes 8 MiB of WAL: it receives but replays nothing, 8× maximum_lag_on_failover behind",
		Reasons: []model.ReasonCode{model.ReasonReplicaLagging},
		run:     runPGReplicaLagging,
	})
	register(&Scenario{
		Name:  "pg-lock-stale",
		Shape: Patroni,
		Summary: "maintenance mode, then the primary's Patroni frozen (SIGSTOP; PostgreSQL keeps running): nobody renews " +
			"the leader lock, whose renewTime + ttl stays in the past, and the primary's REST API answers nothing (so no member answers as primary)",
		Reasons: []model.ReasonCode{model.ReasonLeaderLockStale, model.ReasonMaintenancePaused, model.ReasonMemberUnreachable,
			model.ReasonPrimaryMissing},
		MayAlso: []model.ReasonCode{model.ReasonPodNotReady, model.ReasonClientEndpointsMissing},
		run:     runPGLockStale,
	})
	register(&Scenario{
		Name:  "pg-split-primary",
		Shape: Patroni,
		Summary: "maintenance mode, then one replica's PostgreSQL promoted behind Patroni's back (pg_ctl promote): " +
			"two writable primaries on different timelines",
		Reasons: []model.ReasonCode{model.ReasonPrimarySplit, model.ReasonMaintenancePaused},
		MayAlso: []model.ReasonCode{model.ReasonReplicaNotStreaming, model.ReasonReplicaDiverged},
		run:     runPGSplitPrimary,
	})
	register(&Scenario{
		Name:  "pg-no-sync-standby",
		Shape: Patroni,
		Summary: "synchronous_mode on, both replicas stopped (break stop): the primary runs and takes writes with no " +
			"synchronous standby (the <scope>-sync ConfigMap names none) and no failover candidate",
		Reasons: []model.ReasonCode{model.ReasonSyncStandbyMissing, model.ReasonMemberUnreachable, model.ReasonFailoverCandidatesNone},
		MayAlso: []model.ReasonCode{model.ReasonReplicaNotStreaming, model.ReasonPodNotReady},
		run:     runPGNoSyncStandby,
	})
	register(&Scenario{
		Name:  "pg-diverged",
		Shape: Patroni,
		Summary: "use_pg_rewind off; in maintenance mode a replica was promoted and written to, then maintenance mode " +
			"ended: Patroni demoted it but cannot rewind it, so it runs as a replica on a timeline of its own, not streaming. " +
			"Its REST API asks for basic auth on POST (Secret pg-diverged-rest-auth, named by hactl.dev/rest-auth-secret)",
		Reasons: []model.ReasonCode{model.ReasonReplicaDiverged},
		MayAlso: []model.ReasonCode{model.ReasonReplicaNotStreaming},
		run:     runPGDiverged,
	})
}

// lagWAL is how much WAL pg-replica-lagging's replica misses.
const lagWAL = 8 // MiB

// formPG forms scenario s's Patroni cluster (its Params, changed by tune
// when set) and, with pause, puts it in maintenance mode: the start every
// pg scenario shares.
func formPG(ctx context.Context, env Env, s *Scenario, tune func(*Params), pause bool) (p Params, leader string, replicas []string, err error) {
	if p, err = patroniParams(env, s.Name); err != nil {
		return p, "", nil, err
	}
	if tune != nil {
		tune(&p)
	}
	if leader, replicas, err = formPatroni(ctx, env, p); err != nil {
		return p, "", nil, err
	}
	if pause {
		err = setPause(ctx, env, s.Name, leader, true, members(s.Name, p.Replicas)...)
	}
	return p, leader, replicas, err
}

// waitSyncKey polls the sync key <cluster>-sync until it names leader and
// a standby that ok accepts, and returns that standby.
func waitSyncKey(ctx context.Context, env Env, cluster, leader, what string, ok func(standby string) bool) (string, error) {
	for {
		cm, err := env.Kube.CoreV1().ConfigMaps(env.Namespace).Get(ctx, cluster+"-sync", metav1.GetOptions{})
		if err == nil && cm.Annotations["leader"] == leader && ok(cm.Annotations["sync_standby"]) {
			env.Logf("scenario %s: sync key %v", cluster, cm.Annotations)
			return cm.Annotations["sync_standby"], nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the sync key to name %s: %w", what, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func runPGReplicaLagging(ctx context.Context, env Env, s *Scenario) error {
	p, _, _, err := formPG(ctx, env, s, nil, false)
	if err != nil {
		return err
	}
	return stallReplica(ctx, env, s.Name, members(s.Name, p.Replicas))
}

// stallReplica stalls the WAL replay of a replica of cluster (members
// all) while its primary writes lagWAL MiB, and returns once that replica
// has received the WAL but replayed none of it: lagWAL/2 ×
// maximumLagOnFailover behind or more.
func stallReplica(ctx context.Context, env Env, cluster string, all []string) error {
	// On a loaded machine the primary may have changed since the cluster
	// formed: stall a replica of the primary as it is now.
	var leader string
	err := waitPatroni(ctx, env, cluster, "one primary", all, func(sts map[string]PatroniStatus) bool {
		var ok bool
		leader, ok = leaderOf(sts)
		return ok
	})
	if err != nil {
		return err
	}
	var replicas []string
	for _, m := range all {
		if m != leader {
			replicas = append(replicas, m)
		}
	}
	victim := replicas[0]
	if err := env.Break(ctx, victim, fault.StallReplay, nil); err != nil {
		return err
	}
	if err := writeWAL(ctx, env, leader, "hactl_lag", lagWAL); err != nil {
		return fmt.Errorf("writing WAL on %s: %w", leader, err)
	}
	return waitPatroni(ctx, env, cluster, victim+" receiving but not replaying", []string{leader, victim}, func(sts map[string]PatroniStatus) bool {
		l, v := sts[leader], sts[victim]
		if l.XLog.Location == nil || v.XLog.ReplayedLocation == nil || v.XLog.ReceivedLocation == nil {
			return false
		}
		behind := *l.XLog.Location - *v.XLog.ReplayedLocation
		if behind < lagWAL/2*maximumLagOnFailover || *v.XLog.ReceivedLocation < *l.XLog.Location {
			return false
		}
		env.Logf("scenario %s: %s replayed %d, received %d; leader %s at %d: %d bytes behind", cluster, victim,
			*v.XLog.ReplayedLocation, *v.XLog.ReceivedLocation, leader, *l.XLog.Location, behind)
		return true
	})
}

func runPGLockStale(ctx context.Context, env Env, s *Scenario) error {
	_, leader, _, err := formPG(ctx, env, s, nil, true)
	if err != nil {
		return err
	}
	return freezeLeader(ctx, env, s.Name, leader, leaderLock)
}

// freezeLeader freezes the Patroni of cluster's leader (in maintenance
// mode: PostgreSQL keeps running) and returns once its leader lock, which
// lock reads, has gone stale.
func freezeLeader(ctx context.Context, env Env, cluster, leader string, lock func(ctx context.Context, env Env, scope string) (map[string]string, error)) error {
	if err := env.Break(ctx, leader, fault.FreezePatroni, nil); err != nil {
		return err
	}
	env.Logf("scenario %s: froze %s's Patroni; waiting for its lock to go stale (ttl %s)", cluster, leader, patroniTTL)
	for {
		ann, err := lock(ctx, env, cluster)
		if err == nil && ann["leader"] == leader && lockStale(ann, time.Now()) {
			env.Logf("scenario %s: leader lock of %s last renewed %s (ttl %s)", cluster, leader, ann["renewTime"], ann["ttl"])
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s's leader lock to go stale (%v, %v): %w", leader, ann, err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func runPGSplitPrimary(ctx context.Context, env Env, s *Scenario) error {
	// Without pg_rewind Patroni cannot repair the rogue even in maintenance
	// mode: with it, a paused Patroni still demotes and rewinds a primary
	// without the lock once it finds a rewind needed, and the split heals
	// at a moment of its choosing.
	_, leader, replicas, err := formPG(ctx, env, s, func(p *Params) { p.NoRewind = true }, true)
	if err != nil {
		return err
	}
	rogue := replicas[0]
	return promoteRogue(ctx, env, s.Name, rogue, []string{leader, rogue}, func(sts map[string]PatroniStatus) bool {
		return sts[leader].primary() && sts[rogue].Pause
	}, patroniLoopWait)
}

// promoteRogue promotes rogue's PostgreSQL behind Patroni's back (pg_ctl
// promote) and returns once rogue has answered as a running primary, with
// also holding for the members read, through two HA loops in a row.
//
// A promotion that lands while the rogue's Patroni is in the middle of an
// HA loop is undone even in maintenance mode: that loop saw a replica in
// recovery, then finds standby.signal gone and restarts PostgreSQL as a
// replica (on the new timeline, which the leader's cannot feed). So a
// primary seen once is not enough: promoteRogue waits for it to hold. A
// rogue that runs as a replica again after it was seen as a primary, or on
// a later timeline than before the promotion, was undone: once it runs
// again, and only if it runs as a replica (pg_ctl promote refuses a
// primary), it is promoted again, up to three times in all.
//
// loop is the cluster's HA loop interval (loop_wait).
func promoteRogue(ctx context.Context, env Env, cluster, rogue string, read []string, also func(map[string]PatroniStatus) bool, loop time.Duration) error {
	const attempts = 3
	promote := true
	for attempt := 1; ; attempt++ {
		var before int64
		if promote {
			if st, err := GetPatroni(ctx, env, rogue); err == nil {
				before = st.Timeline
			}
			if err := env.Break(ctx, rogue, fault.Promote, nil); err != nil {
				return err
			}
		}
		actx, cancel := context.WithTimeout(ctx, 5*loop)
		var since time.Time
		seen, undone := false, false
		err := waitPatroni(actx, env, cluster, rogue+" a primary for two HA loops", read, func(sts map[string]PatroniStatus) bool {
			for _, m := range read {
				if _, ok := sts[m]; !ok {
					return false // not read this time: neither holds nor breaks
				}
			}
			r := sts[rogue]
			if r.Role == "replica" && r.State == "running" && (seen || (before > 0 && r.Timeline > before)) {
				undone = true
				return true
			}
			seen = seen || r.primary()
			if !r.primary() || (also != nil && !also(sts)) {
				since = time.Time{}
				return false
			}
			if since.IsZero() {
				since = time.Now()
			}
			return time.Since(since) >= 2*loop
		})
		cancel()
		if err == nil && undone {
			err = fmt.Errorf("%s runs as a replica again: Patroni undid its promotion", rogue)
		}
		if (err == nil && !undone) || ctx.Err() != nil || attempt == attempts {
			return err
		}
		env.Logf("scenario %s: the promotion of %s did not hold (attempt %d of %d): %v", cluster, rogue, attempt, attempts, err)
		// Wait for Patroni's restart to finish; promote again only a
		// rogue that runs as a replica.
		var now PatroniStatus
		err = waitPatroni(ctx, env, cluster, rogue+" running again", []string{rogue}, func(sts map[string]PatroniStatus) bool {
			now = sts[rogue]
			return now.State == "running"
		})
		if err != nil {
			return err
		}
		promote = now.Role == "replica"
	}
}

func runPGNoSyncStandby(ctx context.Context, env Env, s *Scenario) error {
	_, leader, replicas, err := formPG(ctx, env, s, func(p *Params) { p.SynchronousMode = true }, false)
	if err != nil {
		return err
	}
	// First the cluster has a synchronous standby: the sync key names
	// one (Patroni picks it an HA loop or two after the replicas stream).
	standby, err := waitSyncKey(ctx, env, s.Name, leader, "a standby", func(sb string) bool { return sb != "" })
	if err != nil {
		return err
	}
	env.Logf("scenario %s: %s is the synchronous standby; stopping %s", s.Name, standby, strings.Join(replicas, ", "))
	for _, r := range replicas {
		if err := env.Break(ctx, r, fault.Stop, nil); err != nil {
			return err
		}
	}
	err = waitPatroni(ctx, env, s.Name, "a primary without replicas", []string{leader}, func(sts map[string]PatroniStatus) bool {
		return sts[leader].primary() && len(sts[leader].Replication) == 0
	})
	if err != nil {
		return err
	}
	// Patroni drops the stopped standby from the sync key within a loop.
	_, err = waitSyncKey(ctx, env, s.Name, leader, "no standby", func(sb string) bool { return sb == "" })
	return err
}

func runPGDiverged(ctx context.Context, env Env, s *Scenario) error {
	// Its REST API asks for basic auth on unsafe methods: the reseed the
	// e2e tests run through kubectl must send the Secret's credentials.
	p, leader, replicas, err := formPG(ctx, env, s, func(p *Params) { p.NoRewind, p.RESTAuth = true, true }, false)
	if err != nil {
		return err
	}
	all := members(s.Name, p.Replicas)
	if err := setPause(ctx, env, s.Name, leader, true, all...); err != nil {
		return err
	}
	rogue := replicas[0]
	if err := promoteRogue(ctx, env, s.Name, rogue, []string{rogue}, nil, patroniLoopWait); err != nil {
		return err
	}
	if err := writeWAL(ctx, env, rogue, "hactl_diverged", 1); err != nil {
		return fmt.Errorf("writing on the promoted %s: %w", rogue, err)
	}
	if err := setPause(ctx, env, s.Name, leader, false, all...); err != nil {
		return err
	}
	// Patroni demotes the rogue; without pg_rewind it cannot follow the
	// leader and stays a replica that streams nothing. Wait until that
	// has held for two HA loops.
	var since time.Time
	return waitPatroni(ctx, env, s.Name, rogue+" demoted and not streaming", []string{leader, rogue}, func(sts map[string]PatroniStatus) bool {
		l, r := sts[leader], sts[rogue]
		if !l.primary() || r.Role != "replica" || r.State != "running" || l.streaming(rogue) {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 2*patroniLoopWait
	})
}
