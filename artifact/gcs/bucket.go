package gcs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// bucket implements driver.Bucket over the GCS JSON API.
type bucket struct {
	name       string
	endpoint   string // without a trailing "/"
	client     *http.Client
	pageSize   int           // listing page size when the caller sets none
	retryDelay time.Duration // first back-off of a retried GET
}

var _ driver.Bucket = (*bucket)(nil)

// object is the JSON API's object resource (the fields used here).
type object struct {
	Name               string            `json:"name,omitempty"`
	ContentType        string            `json:"contentType,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	MD5Hash            string            `json:"md5Hash,omitempty"`
	Size               int64             `json:"size,string,omitempty"`
	ETag               string            `json:"etag,omitempty"`
	TimeCreated        time.Time         `json:"timeCreated,omitzero"`
	Updated            time.Time         `json:"updated,omitzero"`
}

func (o *object) md5() []byte {
	sum, err := base64.StdEncoding.DecodeString(o.MD5Hash)
	if err != nil || len(sum) == 0 {
		return nil
	}
	return sum
}

// noAs is the asFunc handed to Before* callbacks: no driver-specific types.
func noAs(any) bool { return false }

// objectsURL is the JSON API URL of the bucket's objects collection.
func (b *bucket) objectsURL() string {
	return b.endpoint + "/storage/v1/b/" + url.PathEscape(b.name) + "/o"
}

// objectURL is the JSON API URL of key's object; the whole escaped name is
// one path segment ("/" becomes %2F).
func (b *bucket) objectURL(key string) string {
	return b.objectsURL() + "/" + url.PathEscape(escapeKey(key))
}

// checkKeys refuses empty keys: "" names no object (and ".../o/" is the
// listing URL).
func checkKeys(keys ...string) error {
	for _, k := range keys {
		if k == "" {
			return errEmptyKey
		}
	}
	return nil
}

// ErrorCode implements driver.Bucket.
func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode { return errorCode(err) }

// As implements driver.Bucket; there are no driver-specific types.
func (b *bucket) As(any) bool { return false }

// ErrorAs implements driver.Bucket; there are no driver-specific types.
func (b *bucket) ErrorAs(error, any) bool { return false }

// Close implements driver.Bucket.
func (b *bucket) Close() error { return nil }

// SignedURL implements driver.Bucket: not supported.
func (b *bucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", fmt.Errorf("%w: SignedURL", errUnimplemented)
}

// Attributes implements driver.Bucket.
func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := checkKeys(key); err != nil {
		return nil, err
	}
	var o object
	if err := b.getJSON(ctx, b.objectURL(key), "stat", key, &o); err != nil {
		return nil, err
	}
	etag := o.ETag
	if etag != "" && !strings.HasPrefix(etag, `"`) && !strings.HasPrefix(etag, `W/"`) {
		etag = strconv.Quote(etag)
	}
	return &driver.Attributes{
		CacheControl:       o.CacheControl,
		ContentDisposition: o.ContentDisposition,
		ContentEncoding:    o.ContentEncoding,
		ContentLanguage:    o.ContentLanguage,
		ContentType:        o.ContentType,
		Metadata:           o.Metadata,
		CreateTime:         o.TimeCreated,
		ModTime:            o.Updated,
		Size:               o.Size,
		MD5:                o.md5(),
		ETag:               etag,
	}, nil
}

// ListPaged implements driver.Bucket.
func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts.BeforeList != nil {
		if err := opts.BeforeList(noAs); err != nil {
			return nil, err
		}
	}
	q := url.Values{}
	if opts.Prefix != "" {
		q.Set("prefix", escapeKey(opts.Prefix))
	}
	if opts.Delimiter != "" {
		q.Set("delimiter", escapeKey(opts.Delimiter))
	}
	size := opts.PageSize
	if size <= 0 {
		size = b.pageSize
	}
	q.Set("maxResults", strconv.Itoa(size))
	if len(opts.PageToken) > 0 {
		q.Set("pageToken", string(opts.PageToken))
	}
	var res struct {
		Items         []object `json:"items"`
		Prefixes      []string `json:"prefixes"`
		NextPageToken string   `json:"nextPageToken"`
	}
	if err := b.getJSON(ctx, b.objectsURL()+"?"+q.Encode(), "list", opts.Prefix, &res); err != nil {
		return nil, err
	}
	page := &driver.ListPage{}
	if res.NextPageToken != "" {
		page.NextPageToken = []byte(res.NextPageToken)
	}
	for i := range res.Items {
		o := &res.Items[i]
		page.Objects = append(page.Objects, &driver.ListObject{
			Key: unescapeKey(o.Name), ModTime: o.Updated, Size: o.Size, MD5: o.md5(),
		})
	}
	for _, p := range res.Prefixes {
		page.Objects = append(page.Objects, &driver.ListObject{Key: unescapeKey(p), IsDir: true})
	}
	// The JSON API lists the "directories" after the objects.
	sort.Slice(page.Objects, func(i, j int) bool { return page.Objects[i].Key < page.Objects[j].Key })
	return page, nil
}

// reader is a driver.Reader over a media download.
type reader struct {
	r     io.Reader
	body  io.Closer
	attrs driver.ReaderAttributes
}

func (r *reader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *reader) Close() error                         { return r.body.Close() }
func (r *reader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *reader) As(any) bool                          { return false }

// emptyReader reads nothing from an object with attributes a.
func emptyReader(a *driver.Attributes) *reader {
	return &reader{
		r:     http.NoBody,
		body:  http.NoBody,
		attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size},
	}
}

// NewRangeReader implements driver.Bucket: a GET with alt=media and, for
// part of the object, a Range header.
func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if err := checkKeys(key); err != nil {
		return nil, err
	}
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(noAs); err != nil {
			return nil, err
		}
	}
	// Nothing to read, or a range past the end (416): the attributes suffice.
	emptyRead := func() (driver.Reader, error) {
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, err
		}
		return emptyReader(a), nil
	}
	if length == 0 {
		return emptyRead()
	}
	header := http.Header{}
	switch {
	case length > 0:
		header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := b.get(ctx, b.objectURL(key)+"?alt=media", header, "read", key)
	if hasStatus(err, http.StatusRequestedRangeNotSatisfiable) {
		return emptyRead()
	}
	if err != nil {
		return nil, err
	}
	r := &reader{r: resp.Body, body: resp.Body, attrs: mediaAttrs(resp)}
	if resp.StatusCode != http.StatusPartialContent && header.Get("Range") != "" {
		// The whole object came back (e.g. a server that ignores Range):
		// skip to offset and stop after length bytes.
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil && err != io.EOF {
			resp.Body.Close()
			return nil, &apiError{op: "read", bucket: b.name, key: key, err: err}
		}
		if length > 0 {
			r.r = io.LimitReader(resp.Body, length)
		}
	}
	return r, nil
}

// mediaAttrs reads the object's attributes from a media download's headers.
func mediaAttrs(resp *http.Response) driver.ReaderAttributes {
	a := driver.ReaderAttributes{ContentType: resp.Header.Get("Content-Type"), Size: resp.ContentLength}
	if a.ContentType == "" {
		a.ContentType = "application/octet-stream"
	}
	if cr := resp.Header.Get("Content-Range"); resp.StatusCode == http.StatusPartialContent {
		// "bytes first-last/total"
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			a.Size, _ = strconv.ParseInt(cr[i+1:], 10, 64)
		}
	} else if n, err := strconv.ParseInt(resp.Header.Get("X-Goog-Stored-Content-Length"), 10, 64); err == nil && a.Size < 0 {
		a.Size = n
	}
	a.ModTime, _ = http.ParseTime(resp.Header.Get("Last-Modified"))
	return a
}

// Delete implements driver.Bucket.
func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if err := checkKeys(key); err != nil {
		return err
	}
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(noAs); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.objectURL(key), nil)
	if err != nil {
		return err
	}
	resp, err := b.do(req, "delete", key)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Copy implements driver.Bucket with the rewrite API, which may take
// several calls for a large object.
func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if err := checkKeys(dstKey, srcKey); err != nil {
		return err
	}
	if opts.BeforeCopy != nil {
		if err := opts.BeforeCopy(noAs); err != nil {
			return err
		}
	}
	u := b.objectURL(srcKey) + "/rewriteTo/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(escapeKey(dstKey))
	token := ""
	for {
		q := ""
		if token != "" {
			q = "?" + url.Values{"rewriteToken": {token}}.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+q, bytes.NewReader([]byte("{}")))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.do(req, "copy", srcKey)
		if err != nil {
			return err
		}
		var res struct {
			Done         bool   `json:"done"`
			RewriteToken string `json:"rewriteToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		switch {
		case err != nil:
			return &apiError{op: "copy", bucket: b.name, key: srcKey, err: fmt.Errorf("decoding the answer: %w", err)}
		case res.Done:
			return nil
		case res.RewriteToken == "":
			return &apiError{op: "copy", bucket: b.name, key: srcKey, err: fmt.Errorf("the rewrite is not done but gave no token")}
		}
		token = res.RewriteToken
	}
}
