package cnpg

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// maxBody bounds how much of a status document is read.
const maxBody = 1 << 20

// pgStatus is the part of the instance manager's status document hactl
// reads: pkg/postgres/status.go's PostgresqlStatus, field names as its
// JSON tags give them (LSNs are strings such as "0/3000060").
type pgStatus struct {
	CurrentLSN          string `json:"currentLsn"`
	ReceivedLSN         string `json:"receivedLsn"`
	ReplayLSN           string `json:"replayLsn"`
	SystemID            string `json:"systemID"`
	IsPrimary           bool   `json:"isPrimary"`
	ReplayPaused        bool   `json:"replayPaused"`
	PendingRestart      bool   `json:"pendingRestart"`
	IsWalReceiverActive bool   `json:"isWalReceiverActive"`
	TimeLineID          int64  `json:"timeLineID"`
	ReplicationInfo     []struct {
		ApplicationName string `json:"applicationName"`
		State           string `json:"state"`
		ReplayLSN       string `json:"replayLsn"`
		SyncState       string `json:"syncState"`
	} `json:"replicationInfo"`
	InstanceManagerVersion string `json:"instanceManagerVersion"`
	// MightBeUnavailableMaskedError is the error the manager masked
	// while the instance may be unavailable on purpose (fenced): its
	// other fields then come from its files, not a running PostgreSQL;
	// IsPgRewindRunning: it rewinds its data to rejoin.
	MightBeUnavailableMaskedError string `json:"mightBeUnavailableMaskedError"`
	IsPgRewindRunning             bool   `json:"isPgRewindRunning"`
}

// ParseLSN reads a PostgreSQL LSN ("16/B374D848": two hexadecimal
// halves) as a byte offset.
func ParseLSN(s string) (int64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("LSN %q: no slash", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	return int64(h<<32 | l), nil
}

// lsn is s as a byte offset, nil when empty or unreadable.
func lsn(s string) *int64 {
	if s == "" {
		return nil
	}
	v, err := ParseLSN(s)
	if err != nil {
		return nil
	}
	return &v
}

// decode turns the instance manager's answer (status code and body) into
// the member's facts.
func decode(member string, code int, body []byte) model.EngineFacts {
	switch {
	case code == nethttp.StatusInternalServerError:
		// The manager answers, its PostgreSQL does not
		// (webserver/remote.go answers the error as text).
		down := strings.TrimSpace(snippet(body))
		if down == "" {
			down = "HTTP 500"
		}
		return model.EngineFacts{Reachable: true, MemberID: member, CNPG: &model.CNPGFacts{Down: down}}
	case code == nethttp.StatusUnauthorized || code == nethttp.StatusForbidden:
		return model.EngineFacts{Failure: model.ProbeFailureCredentials, Err: fmt.Sprintf("%s: GET %s refused: HTTP %d: %s", member, StatusPath, code, snippet(body))}
	case code != nethttp.StatusOK:
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: GET %s: HTTP %d: %s", member, StatusPath, code, snippet(body))}
	}
	var d pgStatus
	if err := json.Unmarshal(body, &d); err != nil {
		return model.EngineFacts{Failure: model.ProbeFailureOther, Err: fmt.Sprintf("%s: GET %s: not a status document: %v: %s", member, StatusPath, err, snippet(body))}
	}
	switch {
	case d.MightBeUnavailableMaskedError != "":
		// Fenced, or otherwise unavailable on purpose: what it says of
		// its role is read from its files, not from a running
		// PostgreSQL.
		return model.EngineFacts{Reachable: true, MemberID: member, CNPG: &model.CNPGFacts{Down: "it may be unavailable on purpose (fenced?): " + snippet([]byte(d.MightBeUnavailableMaskedError))}}
	case d.IsPgRewindRunning:
		return model.EngineFacts{Reachable: true, MemberID: member, CNPG: &model.CNPGFacts{Down: "pg_rewind is running"}}
	}
	f := &model.CNPGFacts{
		IsPrimary: d.IsPrimary, CurrentLSN: lsn(d.CurrentLSN), ReceivedLSN: lsn(d.ReceivedLSN), ReplayLSN: lsn(d.ReplayLSN),
		TimelineID: d.TimeLineID, SystemID: d.SystemID, ReplayPaused: d.ReplayPaused, WALReceiverActive: d.IsWalReceiverActive,
		PendingRestart: d.PendingRestart, ManagerVersion: d.InstanceManagerVersion,
	}
	for _, r := range d.ReplicationInfo {
		f.Replication = append(f.Replication, model.CNPGReplication{Name: r.ApplicationName, State: r.State, SyncState: r.SyncState, ReplayLSN: lsn(r.ReplayLSN)})
	}
	e := model.EngineFacts{Reachable: true, MemberID: member, ClusterID: d.SystemID, Version: d.InstanceManagerVersion, CNPG: f}
	if d.IsPrimary {
		e.LeaderID = member
	}
	return e
}

// dialGet asks the instance's status port through the DialFunc (a
// port-forward, or the pod's IP in the cluster): plain HTTP, as the
// instance manager serves it without --status-port-tls, else HTTPS.
func dialGet(ctx context.Context, t engine.Target, o engine.ProbeOptions, port int) (int, []byte, error) {
	tr := &nethttp.Transport{Proxy: nil, DisableKeepAlives: true, DisableCompression: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return o.Dial(ctx, t.Namespace, t.Pod, port)
		}}
	scheme := "http"
	if t.TLS {
		// --status-port-tls: the instance manager's certificate is the
		// cluster's server certificate, for its Services' names; as the
		// API server's pod proxy does, the connection is not verified:
		// nothing is sent but this GET, and no credential.
		scheme = "https"
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // read-only status, no credential sent
	}
	defer tr.CloseIdleConnections()
	c := &nethttp.Client{Transport: tr, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		return nethttp.ErrUseLastResponse
	}}
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, scheme+"://"+net.JoinHostPort(t.Pod, strconv.Itoa(port))+StatusPath, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, engine.UnwrapURL(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}
