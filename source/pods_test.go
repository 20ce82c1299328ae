package source

import (
	"strconv"
	"testing"
)

// FuzzMemberOrdinal: whatever a pod is named, an ordinal is accepted only
// as the StatefulSet controller writes it, and within bounds.
func FuzzMemberOrdinal(f *testing.F) {
	for _, s := range []string{"etcd-0", "etcd-01", "etcd-99999999999", "etcd--1", "etcd-+1", "etcd-", "etcd-1x", "other-1"} {
		f.Add("etcd", s)
	}
	f.Fuzz(func(t *testing.T, sts, pod string) {
		n, ok := MemberOrdinal(sts, pod)
		if !ok {
			return
		}
		if n < 0 || n > MaxOrdinal || sts+"-"+strconv.Itoa(n) != pod {
			t.Fatalf("MemberOrdinal(%q, %q) = %d", sts, pod, n)
		}
	})
}
