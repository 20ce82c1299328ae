package fault

import (
	"fmt"
	"strings"
)

// Kind is one fault.
type Kind int

// The faults. Member faults act on one member's process or data; cluster
// faults (Colocate) act on the member's StatefulSet.
const (
	// Stop stops the member's process (SIGTERM, then SIGKILL after the
	// pod's grace period) and keeps it stopped until Resume.
	Stop Kind = iota + 1
	// Pause freezes the member's processes (SIGSTOP): the process is still
	// there, but answers nothing.
	Pause
	// Resume undoes Pause (SIGCONT) or Stop (starts the process again).
	Resume
	// Kill SIGKILLs the member's processes; the runner restarts them as a
	// kubelet would, counting the restart.
	Kill
	// Wipe stops the member, empties its data directory (the PVC's
	// directory stays bound) and starts it again with the flags its pod
	// spec gives.
	Wipe
	// Rebootstrap wipes the member and starts it with chosen flags, by
	// default the seed 000 ones: --initial-cluster-state=new and an
	// --initial-cluster naming only the member itself, so it forms its
	// own one-member cluster.
	Rebootstrap
	// FillQuota writes through the member until the cluster's backend
	// quota is exhausted and etcd raises the NOSPACE alarm.
	FillQuota
	// Isolate cuts every peer (raft) connection to and from the member;
	// clients can still reach it.
	Isolate
	// Heal undoes Isolate.
	Heal
	// Colocate puts every member of the member's cluster on the member's
	// node (a rolling update of the StatefulSet with a nodeSelector).
	Colocate
	// FreezePatroni freezes (SIGSTOP) only the container's main process —
	// Patroni — leaving PostgreSQL, which Patroni started in a session of
	// its own, running and writable: the split-brain generator. Resume
	// thaws it.
	FreezePatroni
	// StallReplay freezes (SIGSTOP) a PostgreSQL replica's startup
	// process: WAL still arrives but is no longer replayed (Patroni
	// 3.0.2 undoes pg_wal_replay_pause(), not this). Resume thaws it.
	StallReplay
	// StallReceive freezes a replica's walreceiver: no WAL arrives.
	// Resume thaws it.
	StallReceive
	// CrashPostgres SIGKILLs the member's postmaster (Patroni stays up
	// and restarts it).
	CrashPostgres
	// Promote runs `pg_ctl promote` on the member's PostgreSQL data
	// directory, as the pod's user, behind Patroni's back.
	Promote
)

var names = map[Kind]string{
	Stop:        "stop",
	Pause:       "pause",
	Resume:      "resume",
	Kill:        "kill",
	Wipe:        "wipe",
	Rebootstrap: "rebootstrap",
	FillQuota:   "fill-quota",
	Isolate:     "isolate",
	Heal:        "heal",
	Colocate:    "colocate",

	FreezePatroni: "freeze-patroni",
	StallReplay:   "stall-replay",
	StallReceive:  "stall-receive",
	CrashPostgres: "crash-postgres",
	Promote:       "promote",
}

func (k Kind) String() string {
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("fault.Kind(%d)", int(k))
}

// All returns every fault kind in declaration order.
func All() []Kind {
	out := make([]Kind, 0, len(names))
	for k := Stop; k <= Promote; k++ {
		out = append(out, k)
	}
	return out
}

// Parse turns a fault name (as printed by String) into its Kind.
func Parse(s string) (Kind, error) {
	for k, n := range names {
		if n == s {
			return k, nil
		}
	}
	all := make([]string, 0, len(names))
	for _, k := range All() {
		all = append(all, k.String())
	}
	return 0, fmt.Errorf("unknown fault %q (one of: %s)", s, strings.Join(all, ", "))
}

// TakesArgs reports whether the fault accepts extra arguments (the flags
// a Rebootstrap starts the member with).
func (k Kind) TakesArgs() bool { return k == Rebootstrap }
