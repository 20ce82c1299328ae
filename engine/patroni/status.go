package patroni

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/model"

	"github.com/hactl-dev/hactl/engine"
)

// status is GET /patroni's document (Patroni 3.0.2; later releases add
// fields, which are ignored). Optional numbers are pointers: absent is not
// zero.
type status struct {
	State                    string          `json:"state"`
	PostmasterStartTime      string          `json:"postmaster_start_time"`
	Role                     string          `json:"role"`
	ServerVersion            int             `json:"server_version"`
	Timeline                 int64           `json:"timeline"`
	XLog                     *xlog           `json:"xlog"`
	Replication              []replication   `json:"replication"`
	SyncStandby              bool            `json:"sync_standby"`
	PendingRestart           bool            `json:"pending_restart"`
	Pause                    bool            `json:"pause"`
	ClusterUnlocked          bool            `json:"cluster_unlocked"`
	Tags                     map[string]any  `json:"tags"`
	DCSLastSeen              *float64        `json:"dcs_last_seen"`
	DatabaseSystemIdentifier string          `json:"database_system_identifier"`
	Patroni                  *patroniVersion `json:"patroni"`
}

// xlog is a primary's {location} or a replica's {received_location,
// replayed_location, paused}.
type xlog struct {
	Location         *int64 `json:"location"`
	ReceivedLocation *int64 `json:"received_location"`
	ReplayedLocation *int64 `json:"replayed_location"`
	Paused           bool   `json:"paused"`
}

type replication struct {
	ApplicationName string `json:"application_name"`
	State           string `json:"state"`
	SyncState       string `json:"sync_state"`
}

type patroniVersion struct {
	Version string `json:"version"`
	Scope   string `json:"scope"`
}

// decodeStatus reads a /patroni body. Patroni answers /patroni (and its
// aliases) with the same document whatever the HTTP code, so the code does
// not matter here: a body that decodes into an object naming a state or a
// role is an answer. A field of an unexpected type is dropped, not fatal.
func decodeStatus(body []byte) (*status, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	if _, ok := keys["state"]; !ok {
		if _, ok := keys["role"]; !ok {
			return nil, errors.New("the answer is JSON but names neither a state nor a role: not a Patroni status")
		}
	}
	var s status
	if err := json.Unmarshal(body, &s); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("the answer does not decode: %w", err)
		}
	}
	return &s, nil
}

// facts turns the status into the model's PatroniFacts. Positions stay nil
// when the member did not report them (a 200 without "xlog" happens when
// Patroni's status query failed: state "unknown").
func (s *status) facts() *model.PatroniFacts {
	p := &model.PatroniFacts{
		Role:            s.Role,
		State:           s.State,
		Timeline:        s.Timeline,
		SyncStandby:     s.SyncStandby,
		PendingRestart:  s.PendingRestart,
		Paused:          s.Pause,
		ClusterUnlocked: s.ClusterUnlocked,
		NoFailover:      truthy(s.Tags["nofailover"]),
		SystemID:        s.DatabaseSystemIdentifier,
		ServerVersion:   s.ServerVersion,
		PostmasterStart: s.PostmasterStartTime,
	}
	if x := s.XLog; x != nil {
		p.WALLocation = x.Location
		p.ReceivedLocation = x.ReceivedLocation
		p.ReplayedLocation = x.ReplayedLocation
		p.ReplayPaused = x.Paused
	}
	for _, r := range s.Replication {
		p.Replication = append(p.Replication, model.PatroniReplication{
			Name: r.ApplicationName, State: r.State, SyncState: r.SyncState,
		})
	}
	if s.DCSLastSeen != nil && *s.DCSLastSeen > 0 {
		sec := int64(*s.DCSLastSeen)
		p.DCSLastSeen = time.Unix(sec, int64((*s.DCSLastSeen-float64(sec))*1e9)).UTC()
	}
	if s.Patroni != nil {
		p.PatroniVersion = s.Patroni.Version
		p.Scope = s.Patroni.Scope
	}
	return p
}

// truthy reads a Patroni tag the way Patroni does: true, or a string such
// as "true", "on", "yes", "1".
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "on", "yes", "1", "t", "y":
			return true
		}
	case float64:
		return v != 0
	}
	return false
}

// PostgresVersion formats PostgreSQL's numeric server_version as its
// release name: 150018 is "15.18", 90624 is "9.6.24". Zero or less gives "".
func PostgresVersion(v int) string {
	switch {
	case v <= 0:
		return ""
	case v >= 100000:
		return fmt.Sprintf("%d.%d", v/10000, v%10000)
	default:
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
}

// clusterView is GET /cluster's document: the member's view of the DCS.
type clusterView struct {
	Members []struct {
		Name string `json:"name"`
		Role string `json:"role"`
	} `json:"members"`
}

// decodeLeader reads a /cluster answer and returns the leader it names
// ("" when it names none: the leader lock is free or its holder has no
// member key).
func decodeLeader(a *answer) (string, error) {
	if a.code != 200 {
		return "", fmt.Errorf("GET /cluster answered HTTP %d: %s", a.code, snippet(a.body))
	}
	var v clusterView
	if err := json.Unmarshal(a.body, &v); err != nil {
		return "", fmt.Errorf("GET /cluster: the answer does not decode: %w", err)
	}
	for _, m := range v.Members {
		if m.Role == "leader" || m.Role == "standby_leader" {
			return m.Name, nil
		}
	}
	return "", nil
}

// snippet is a short, single-line excerpt of an answer body for messages.
func snippet(b []byte) string {
	const limit = 200
	s := engine.Printable(strings.Join(strings.Fields(string(b)), " "))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
