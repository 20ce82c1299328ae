package gcs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"

	"gocloud.dev/blob/driver"
)

// writer streams an object in one multipart upload request (JSON metadata,
// then the bytes). The request body is a pipe: Write hands bytes to the
// HTTP transport, Close sends the closing boundary, which lets the request
// complete and the object be committed. If ctx is cancelled first, Close
// fails the pipe instead, so the request is abandoned unfinished (neither
// the closing boundary nor the end of the chunked body is sent) and no
// object is created or replaced.
type writer struct {
	ctx  context.Context
	pw   *io.PipeWriter
	tail string        // the closing multipart boundary
	done chan struct{} // closed when the request has finished
	err  error         // the request's failure; read only after done
}

var errUploadFinished = errors.New("gcs: the upload request has already finished")

// NewTypedWriter implements driver.Bucket.
func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := checkKeys(key); err != nil {
		return nil, err
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(noAs); err != nil {
			return nil, err
		}
	}
	meta := object{
		Name:               escapeKey(key),
		ContentType:        contentType,
		ContentEncoding:    opts.ContentEncoding,
		ContentDisposition: opts.ContentDisposition,
		ContentLanguage:    opts.ContentLanguage,
		CacheControl:       opts.CacheControl,
		Metadata:           opts.Metadata,
	}
	if len(opts.ContentMD5) > 0 {
		// The service refuses the upload if the bytes do not match.
		meta.MD5Hash = base64.StdEncoding.EncodeToString(opts.ContentMD5)
	}
	head, boundary, err := multipartHead(&meta)
	if err != nil {
		return nil, err
	}
	q := url.Values{"uploadType": {"multipart"}}
	if opts.IfNotExist {
		q.Set("ifGenerationMatch", "0") // only if there is no live object
	}
	u := b.endpoint + "/upload/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, io.MultiReader(bytes.NewReader(head), pr))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "multipart/related; boundary="+boundary)
	w := &writer{ctx: ctx, pw: pw, tail: "\r\n--" + boundary + "--\r\n", done: make(chan struct{})}
	go func() {
		defer close(w.done)
		resp, err := b.do(req, "write", key)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		w.err = err
		if err == nil {
			err = errUploadFinished
		}
		pr.CloseWithError(err) // unblocks a pending Write
	}()
	return w, nil
}

// multipartHead returns the start of a multipart/related upload body: the
// metadata part and the headers of the media part.
func multipartHead(meta *object) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json; charset=UTF-8"}})
	if err != nil {
		return nil, "", err
	}
	if err := json.NewEncoder(part).Encode(meta); err != nil {
		return nil, "", err
	}
	h := textproto.MIMEHeader{}
	if meta.ContentType != "" {
		h.Set("Content-Type", meta.ContentType)
	}
	if _, err := mw.CreatePart(h); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.Boundary(), nil
}

// Write implements io.Writer. It returns once the transport has taken p.
func (w *writer) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil {
		// The request has ended (or is ending): report why.
		<-w.done
		if w.err != nil {
			return n, w.err
		}
	}
	return n, err
}

// Close completes the upload, or abandons it if ctx is done.
func (w *writer) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.pw.CloseWithError(err)
		<-w.done
		return err
	}
	_, err := io.WriteString(w.pw, w.tail)
	w.pw.Close()
	<-w.done
	if w.err != nil {
		return w.err
	}
	return err
}
