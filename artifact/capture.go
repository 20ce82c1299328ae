package artifact

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A capture pod (`hactl-capture -o json`, the agent image's capture binary) uploads a
// generation's files next to the source member and publishes nothing: it
// writes one JSON line per CaptureLine on stdout, progress while it
// streams and, last, what it uploaded or why it failed. The lock holder
// reads the last lines from the pod's log and publishes the upload
// (Store.AdoptCapture, then Upload.Publish), so only these lines cross the
// API server, never the data.
const (
	// CaptureProgressKind: Bytes streamed so far.
	CaptureProgressKind = "CaptureProgress"
	// CaptureReceiptKind: the upload is complete and unpublished.
	CaptureReceiptKind = "CaptureReceipt"
	// CaptureFailedKind: nothing usable was uploaded; Error says why.
	CaptureFailedKind = "CaptureFailed"
)

// CaptureLine is one line of a capture pod's log.
type CaptureLine struct {
	Kind string `json:"kind"`
	// Bytes streamed so far (progress), or uploaded (receipt).
	Bytes int64 `json:"bytes,omitempty"`
	// Total is the source's database size, when known (progress).
	Total int64 `json:"total,omitempty"`

	// The receipt: generation, upload directory, when it began, its
	// committed files (path, size, SHA-256, as hashed while streaming),
	// the identity to publish with, and the manifest's source and author.
	Generation string    `json:"generation,omitempty"`
	Upload     string    `json:"upload,omitempty"`
	Began      time.Time `json:"began,omitzero"`
	Files      []File    `json:"files,omitempty"`
	Identity   *Identity `json:"identity,omitempty"`
	Source     *Source   `json:"source,omitempty"`
	CreatedBy  string    `json:"createdBy,omitempty"`
	TookMS     int64     `json:"tookMS,omitempty"`

	// Error says why the capture failed; SourceChanged that the member
	// answered as another member or cluster than the one expected.
	Error         string `json:"error,omitempty"`
	SourceChanged bool   `json:"sourceChanged,omitempty"`
	// StoreFailed: the store refused or did not answer the upload (from
	// this pod: its credentials, its network); nothing was published.
	StoreFailed bool `json:"storeFailed,omitempty"`
}

// ErrNoCaptureReceipt: a capture pod's log holds neither a receipt nor a
// failure.
var ErrNoCaptureReceipt = errors.New("the capture pod's log holds no receipt")

// LastCaptureLines scans a capture pod's log: the last progress count
// (0 when none) and the last receipt or failure line (nil when none).
// Lines that are not capture lines (text, other JSON) are skipped.
func LastCaptureLines(log []byte) (progress int64, last *CaptureLine) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		var l CaptureLine
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		switch l.Kind {
		case CaptureProgressKind:
			progress = l.Bytes
		case CaptureReceiptKind, CaptureFailedKind:
			l := l
			last = &l
		}
	}
	return progress, last
}

// AdoptCapture returns the upload a capture pod's receipt describes,
// ready to Publish with *rc.Identity, after checking that it is the
// generation expected and names its files, identity and upload.
func (s *Store) AdoptCapture(rc *CaptureLine, generation string) (*Upload, error) {
	switch {
	case rc == nil || rc.Kind != CaptureReceiptKind:
		return nil, ErrNoCaptureReceipt
	case rc.Generation != generation:
		return nil, fmt.Errorf("the capture pod uploaded generation %q, not %q", rc.Generation, generation)
	case rc.Identity == nil || rc.Source == nil:
		return nil, fmt.Errorf("%w: the capture receipt of upload %s has no identity or source", ErrManifestInvalid, rc.Upload)
	case rc.Identity.Generation != generation:
		return nil, fmt.Errorf("%w: the capture receipt's identity names generation %q", ErrManifestInvalid, rc.Identity.Generation)
	}
	return s.Adopt(generation, rc.Upload, UploadOptions{Source: *rc.Source, CreatedBy: rc.CreatedBy, Now: rc.Began}, rc.Files)
}
