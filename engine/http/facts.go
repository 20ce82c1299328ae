package http

import (
	"slices"
	"strings"

	"github.com/hactl-dev/hactl/model"
)

// Facts maps document d of member (its name, the member ID when the
// mapping reads none) to engine facts.
func (m *Mapping) Facts(d Document, member string) (model.EngineFacts, error) {
	f := model.EngineFacts{Reachable: true, Document: &model.DocumentFacts{}}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	text := func(key string) string {
		s, err := m.Text(d, key)
		keep(err)
		return s
	}
	num := func(key string) *uint64 {
		n, ok, err := m.Uint(d, key)
		keep(err)
		if !ok {
			return nil
		}
		return &n
	}
	f.MemberID = text(KeyMemberID)
	f.Document.Identified = f.MemberID != ""
	if f.MemberID == "" {
		f.MemberID = member
	}
	f.ClusterID = text(KeyClusterID)
	f.Version = text(KeyVersion)
	role := strings.ToLower(text(KeyRole))
	f.Document.Role = role
	f.LeaderID = text(KeyLeader)
	f.Document.Identified = f.Document.Identified || role != "" || f.LeaderID != ""
	switch {
	case slices.Contains(m.LeaderRoles, role):
		f.LeaderID = f.MemberID
	case f.LeaderID == f.MemberID && role != "":
		// The document names this member as the leader but its role
		// says otherwise: believe neither.
		f.LeaderID = ""
	}
	f.IsLearner = slices.Contains(m.LearnerRoles, role) || strings.EqualFold(text(KeyLearner), "true")
	if t := num(KeyTerm); t != nil {
		f.RaftTerm = *t
	}
	if a := num(KeyApplied); a != nil {
		f.RaftApplied, f.Document.Applied = *a, a
	}
	if fr := num(KeyFrontier); fr != nil {
		f.RaftIndex, f.Document.Frontier = *fr, fr
	}
	if m.Mapped(KeyReady) {
		r := slices.Contains(m.ReadyValues, strings.ToLower(text(KeyReady)))
		f.Document.Ready = &r
	}
	f.Document.Paused = strings.EqualFold(text(KeyPaused), "true")
	return f, first
}
