package adversarial

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/e2esuite"
	"github.com/hactl-dev/hactl/model"
)

// checkRun checks the whole run against the API server's audit log, read
// once it holds every request made before (checkAudit).
func checkRun(t *testing.T, h *history) {
	t.Helper()
	events := s.Audit(t)
	violations, checked, deletes := checkAudit(events, h)
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("audit: %d writes, %d by hactl to the cluster's objects under the lock checked, %d deletes, %d member changes; %d violations",
		len(events), checked, deletes, h.changes, len(violations))
}

// checkAudit checks, from the audit log: only the lock holder wrote the
// cluster's objects (e2esuite.CheckLockDiscipline); every delete of a
// member's pod or volume named a UID the plan its process showed named,
// and has its receipts in the ledger (not checked once a round failed: a
// killed action may have been left unfinished); the run deleted something
// and changed the members, else it proved nothing. It returns the
// violations, how many guarded writes it checked and how many deletes of
// members' objects it saw.
func checkAudit(events []e2esuite.AuditEvent, h *history) (out []string, checked, deletes int) {
	lv, checked := e2esuite.CheckLockDiscipline(events, namespace, cluster, time.Time{})
	for _, v := range lv {
		out = append(out, "lock discipline: "+v)
	}
	if checked == 0 {
		out = append(out, fmt.Sprintf("the audit log holds no write by a hactl process (%d writes in all): the user agent no longer names the lock identity, or the policy records nothing", len(events)))
	}
	shown := h.shownUIDs()
	var rcs []model.Receipt
	for _, rc := range h.receipts {
		rcs = append(rcs, rc)
	}
	receipts := e2esuite.IndexDeletes(rcs)
	for _, e := range events {
		if e.Holder() == "" || e.Verb != "delete" || !e.Guarded(namespace, cluster) {
			continue
		}
		uid := e.DeletedUID()
		if e.ObjectRef.Resource == "pods" && strings.HasPrefix(e.ObjectRef.Name, actions.CapturePodName("")) {
			// hactl's own capture pod, not a member: no plan shows it, but
			// it too is deleted by the lock holder (checked above), fenced.
			if uid == "" {
				out = append(out, fmt.Sprintf("%s had no UID precondition", e))
			}
			continue
		}
		deletes++
		switch {
		case uid == "":
			out = append(out, fmt.Sprintf("%s had no UID precondition", e))
			continue
		case !shown[e.Holder()][uid]:
			out = append(out, fmt.Sprintf("%s deleted uid %s, which the plan its process showed did not name", e, uid))
		}
		if v := receipts.Check(e, h.killed[e.Holder()]); v != "" && !h.failed {
			out = append(out, v)
		}
	}
	if !h.failed {
		out = append(out, e2esuite.CheckChanged("delete of a member's pod or volume", deletes)...)
		out = append(out, e2esuite.CheckChanged("member change", h.changes)...)
	}
	return out, checked, deletes
}
