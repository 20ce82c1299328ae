package status

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hactl-dev/hactl/model"
)

// FuzzDecodeLedger: a ledger ConfigMap anyone may edit never makes the
// decoder panic; every entry it returns has an ID, every key it cannot
// read is listed as unreadable, and entries come out in order.
func FuzzDecodeLedger(f *testing.F) {
	good, _ := json.Marshal(model.LedgerEntry{ID: "replace.etcd-1.x", Action: model.ActionReplace, Member: "etcd-1", State: model.EntryInProgress})
	f.Add("action.replace.etcd-1.x", string(good), "cluster-id", "abc")
	f.Add("action.x", `{"id":""}`, "other", "v")
	f.Add("action.y", `{"id":"y","receipts":[{"seq":-1}]}`, "action.z", `[]`)
	f.Add("action.w", `{"id":"w","startedAt":"not a time"}`, "action.v", `null`)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		cm := &corev1.ConfigMap{Data: map[string]string{k1: v1, k2: v2}}
		l := DecodeLedger(cm)
		for i, e := range l.Entries {
			if e.ID == "" {
				t.Fatalf("entry without an ID: %+v", e)
			}
			if i > 0 && l.Entries[i-1].StartedAt.After(e.StartedAt) {
				t.Fatalf("entries out of order: %v then %v", l.Entries[i-1].StartedAt, e.StartedAt)
			}
		}
		if got := len(l.Entries) + len(l.Unreadable); got > 2 {
			t.Fatalf("%d entries and unreadable keys from 2 keys", got)
		}
	})
}
