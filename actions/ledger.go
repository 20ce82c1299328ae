package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/status"
)

const (
	// ledgerKeyClusterID holds the engine cluster ID hactl saw formed.
	ledgerKeyClusterID = status.LedgerKeyClusterID
	// entryKeyPrefix starts the key of every ledger entry.
	entryKeyPrefix = status.LedgerEntryKeyPrefix
	// maxFinished bounds the finished entries kept; older ones go.
	maxFinished = 20
	// maxReceipts bounds the receipts kept per entry (the first few and
	// the latest are kept).
	maxReceipts = 200
	// ledgerAttempts bounds optimistic-concurrency retries.
	ledgerAttempts = 30
	// maxLedgerBytes bounds the ConfigMap's data (the API server refuses
	// objects over 1 MiB).
	maxLedgerBytes = 512 << 10
	// minReceipts is the fewest receipts compaction keeps per entry.
	minReceipts = 24
)

// errLedgerFull: the ledger cannot be kept within its byte bound.
var errLedgerFull = errors.New("ledger full")

// Ledger is a cluster's record of hactl actions: ConfigMap
// hactl-<cluster>, one key per action holding its entry as JSON, written
// read-modify-write with the ConfigMap's resourceVersion as precondition.
type Ledger struct {
	Client    kubernetes.Interface
	Namespace string
	Cluster   string
	// Owner, when set, becomes the ConfigMap's owner reference.
	Owner *metav1.OwnerReference
}

// LedgerContents is what ReadLedger found.
type LedgerContents = status.LedgerContents

// ReadLedger reads a cluster's ledger; a missing ConfigMap is an empty
// ledger.
func ReadLedger(ctx context.Context, c kubernetes.Interface, namespace, cluster string) (LedgerContents, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, LockName(cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return LedgerContents{}, nil
	}
	if err != nil {
		return LedgerContents{}, fmt.Errorf("reading ledger configmap %s/%s: %w", namespace, LockName(cluster), err)
	}
	return status.DecodeLedger(cm), nil
}

// ledgerData is a ledger being changed: its entries by ID.
type ledgerData struct {
	entries    map[string]*model.LedgerEntry
	clusterID  string
	unreadable []string
}

func decodeLedger(cm *corev1.ConfigMap) *ledgerData {
	c := status.DecodeLedger(cm)
	d := &ledgerData{entries: map[string]*model.LedgerEntry{}, clusterID: c.ClusterID, unreadable: c.Unreadable}
	for i := range c.Entries {
		d.entries[c.Entries[i].ID] = &c.Entries[i]
	}
	return d
}

func sortEntries(es []model.LedgerEntry) { status.SortEntries(es) }

func (d *ledgerData) encode(cm *corev1.ConfigMap) error {
	// Drop the oldest finished entries beyond maxFinished.
	var finished []*model.LedgerEntry
	for _, e := range d.entries {
		if e.State != model.EntryInProgress {
			finished = append(finished, e)
		}
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].UpdatedAt.Before(finished[j].UpdatedAt) })
	for len(finished) > maxFinished {
		delete(d.entries, finished[0].ID)
		finished = finished[1:]
	}
	data := map[string]string{}
	for k, v := range cm.Data {
		if !strings.HasPrefix(k, entryKeyPrefix) && k != ledgerKeyClusterID {
			data[k] = v // keep what others wrote
		}
	}
	for _, k := range d.unreadable {
		data[k] = cm.Data[k]
	}
	for _, e := range d.entries {
		compactReceipts(e, maxReceipts)
	}
	if d.clusterID != "" {
		data[ledgerKeyClusterID] = d.clusterID
	}
	// Bound the ConfigMap in bytes, well below the API server's 1 MiB:
	// drop the oldest finished entries first, then keep fewer receipts
	// of each entry (the first few and the latest). An action in
	// progress is never dropped.
	keep := maxReceipts
	for {
		size := 0
		for k, v := range data {
			if !strings.HasPrefix(k, entryKeyPrefix) {
				size += len(k) + len(v)
			}
		}
		enc := map[string]string{}
		for id, e := range d.entries {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			enc[entryKeyPrefix+id] = string(b)
			size += len(entryKeyPrefix) + len(id) + len(b)
		}
		if size <= maxLedgerBytes || (len(finished) == 0 && keep <= minReceipts) {
			for k, v := range enc {
				data[k] = v
			}
			cm.Data = data
			if size > maxLedgerBytes {
				return fmt.Errorf("%w: %d bytes even with finished entries dropped and receipts compacted", errLedgerFull, size)
			}
			return nil
		}
		if len(finished) > 0 {
			delete(d.entries, finished[0].ID)
			finished = finished[1:]
			continue
		}
		keep /= 2
		for _, e := range d.entries {
			compactReceipts(e, max(keep, minReceipts))
		}
	}
}

// compactReceipts keeps about n of e's receipts: the first 10 (how the
// action began), the latest, and, from those in between, every receipt of
// a step that changes something (or whose outcome is unknown), since
// resuming reads them; the waits in between are left out, and a receipt
// says how many.
func compactReceipts(e *model.LedgerEntry, n int) {
	const head = 10
	if len(e.Receipts) <= n || n <= head+1 {
		return
	}
	rs := e.Receipts
	tailN := n - head - 1
	mid, tail := rs[head:len(rs)-tailN], rs[len(rs)-tailN:]
	out := append([]model.Receipt(nil), rs[:head]...)
	dropped := 0
	for _, r := range mid {
		switch {
		case compactedMarker(r):
			dropped += compactedCount(r)
		case r.Step.Mutates() || r.Step == model.StepAwaitRestored || r.Outcome == model.OutcomeUnknown:
			out = append(out, r)
		default:
			dropped++
		}
	}
	if dropped == 0 {
		return
	}
	gap := model.Receipt{ActionID: e.ID, Action: e.Action, Member: e.Member, Phase: tail[0].Phase,
		Outcome: model.OutcomeDone, At: tail[0].At, Detail: fmt.Sprintf("(%d receipts of waits compacted to keep the ledger small)", dropped)}
	e.Receipts = append(append(out, gap), tail...)
}

func compactedMarker(r model.Receipt) bool {
	return r.Step == "" && strings.HasSuffix(r.Detail, "compacted to keep the ledger small)")
}

func compactedCount(r model.Receipt) int {
	var k int
	if _, err := fmt.Sscanf(r.Detail, "(%d receipts", &k); err != nil || k < 1 {
		return 1
	}
	return k
}

// errNoChange tells update that fn changed nothing to write.
var errNoChange = errors.New("no change")

// ledgerBackoff spaces the retries of a conflicting ledger write.
var ledgerBackoff = wait.Backoff{Steps: ledgerAttempts, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: time.Second}

// update applies fn to the ledger with optimistic concurrency: read, apply,
// write with the read's resourceVersion; on a conflict, read again and
// apply again (client-go's retry, with jittered backoff).
func (l *Ledger) update(ctx context.Context, fn func(d *ledgerData) error) error {
	cms := l.Client.CoreV1().ConfigMaps(l.Namespace)
	name := LockName(l.Cluster)
	conflict := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(ledgerBackoff, conflict, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace,
				Labels: map[string]string{LabelCluster: l.Cluster}}}
			if l.Owner != nil {
				cm.OwnerReferences = []metav1.OwnerReference{*l.Owner}
			}
		case err != nil:
			return fmt.Errorf("reading ledger configmap %s/%s: %w", l.Namespace, name, err)
		}
		d := decodeLedger(cm)
		if err := fn(d); err != nil {
			return err
		}
		// The label finds the ledger in a namespace-wide read: put it
		// back if someone removed it.
		if cm.Labels[LabelCluster] != l.Cluster {
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels[LabelCluster] = l.Cluster
		}
		if err := d.encode(cm); err != nil {
			return fmt.Errorf("encoding ledger: %w", err)
		}
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil && !conflict(err) {
			return fmt.Errorf("writing ledger configmap %s/%s: %w", l.Namespace, name, err)
		}
		return err
	})
	switch {
	case errors.Is(err, errNoChange):
		return nil
	case conflict(err):
		return fmt.Errorf("writing ledger configmap %s/%s: still conflicting after %d attempts: %w", l.Namespace, name, ledgerAttempts, err)
	}
	return err
}

// NewEntryID names a new ledger entry: action.member.time.random.
func NewEntryID(a model.Action, member string, at time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	parts := []string{string(a), member, strings.ToLower(at.UTC().Format("20060102t150405z")), hex.EncodeToString(b)}
	if member == "" { // an action on the whole cluster (restore)
		parts = slices.Delete(parts, 1, 2)
	}
	return strings.Join(parts, ".")
}

// Begin records a new entry, or takes over an existing one (resume): the
// holder becomes e.Holder. Entries named in supersede are marked
// superseded.
func (l *Ledger) Begin(ctx context.Context, e model.LedgerEntry, supersede []string, at time.Time) (model.LedgerEntry, error) {
	var out model.LedgerEntry
	err := l.update(ctx, func(d *ledgerData) error {
		for _, id := range supersede {
			if x, ok := d.entries[id]; ok && x.State == model.EntryInProgress && id != e.ID {
				seq := 1
				if n := len(x.Receipts); n > 0 {
					seq = x.Receipts[n-1].Seq + 1
				}
				x.Receipts = append(x.Receipts, model.Receipt{ActionID: x.ID, Seq: seq, Action: x.Action, Member: x.Member,
					Phase: model.ActionPhaseSuperseded, Step: model.StepReleaseLock, Outcome: model.OutcomeSuperseded, At: at,
					Holder: e.Holder, Detail: "superseded by " + orStr(e.ID, "a new action") + " (" + string(e.Action) + ")"})
				x.State, x.Phase, x.UpdatedAt, x.Holder = model.EntrySuperseded, model.ActionPhaseSuperseded, at, e.Holder
			}
		}
		if x, ok := d.entries[e.ID]; ok {
			x.Holder, x.UpdatedAt = e.Holder, at
			if x.State != model.EntryInProgress {
				return fmt.Errorf("ledger entry %s is %s, not in progress", e.ID, x.State)
			}
			out = *x
			return nil
		}
		e.State, e.StartedAt, e.UpdatedAt = model.EntryInProgress, at, at
		cp := e
		d.entries[e.ID] = &cp
		out = cp
		return nil
	})
	return out, err
}

// Append adds a receipt to entry id (numbering it) and sets the entry's
// phase and state. It returns the receipt as recorded.
func (l *Ledger) Append(ctx context.Context, id string, r model.Receipt, state model.EntryState) (model.Receipt, error) {
	err := l.update(ctx, func(d *ledgerData) error {
		e, ok := d.entries[id]
		if !ok {
			return fmt.Errorf("ledger entry %s is gone", id)
		}
		if r.Holder != "" && e.Holder != "" && e.Holder != r.Holder {
			return fmt.Errorf("%w: ledger entry %s is now held by %s, not %s", ErrLockLost, id, e.Holder, r.Holder)
		}
		if e.State != model.EntryInProgress {
			return fmt.Errorf("ledger entry %s is %s: no receipt is added to a finished action", id, e.State)
		}
		seq := 1
		if n := len(e.Receipts); n > 0 {
			seq = e.Receipts[n-1].Seq + 1
		}
		r.Seq = seq
		e.Receipts = append(e.Receipts, r)
		e.Phase, e.State, e.UpdatedAt = r.Phase, state, r.At
		return nil
	})
	return r, err
}

// RecordClusterID records the engine cluster ID, evidence that the
// cluster has formed (see model.ClusterFacts.KnownClusterID).
func (l *Ledger) RecordClusterID(ctx context.Context, id string) error {
	return l.update(ctx, func(d *ledgerData) error {
		if d.clusterID == id {
			return errNoChange
		}
		d.clusterID = id
		return nil
	})
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
