package pgadversarial

import (
	"encoding/json"

	"github.com/hactl-dev/hactl/internal/e2esuite"
)

// failoverCM is the ConfigMap Patroni's Kubernetes DCS writes when a
// member's REST API accepts a switchover (its annotations leader and
// member name the primary and the candidate): the trace a switchover
// request leaves at the API server, written by Patroni, not by hactl.
const failoverCM = cluster + "-failover"

// auditPolicy records every write in the test namespace as the adversarial
// suites' policy does (e2esuite.AuditPolicy), and besides, with their
// request, the writes of Patroni's failover ConfigMap and every ConfigMap
// created (the candidate of a switchover).
var auditPolicy = e2esuite.AuditPolicy(namespace, `- level: Request
  namespaces: ["`+namespace+`"]
  verbs: ["update", "patch"]
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["`+failoverCM+`"]
# a create names no object in its URL, so resourceNames never match it:
# every ConfigMap create (few: Patroni's failover ConfigMap the first
# time, the ledger, the suite's markers) is recorded with its request
- level: Request
  namespaces: ["`+namespace+`"]
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["configmaps"]
`)

// failoverRequest is the candidate and primary a write of Patroni's
// failover ConfigMap names; ok is false for a write that clears it (the
// switchover carried out or cancelled).
func failoverRequest(e e2esuite.AuditEvent) (leader, candidate string, ok bool) {
	if e.ObjectRef.Resource != "configmaps" || e.ObjectRef.Name != failoverCM || e.Verb == "delete" {
		return "", "", false
	}
	var o struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if json.Unmarshal(e.RequestObject, &o) != nil {
		return "", "", false
	}
	m := o.Metadata.Annotations["member"]
	l := o.Metadata.Annotations["leader"]
	if m == nil || *m == "" {
		return "", "", false
	}
	if l != nil {
		leader = *l
	}
	return leader, *m, true
}
