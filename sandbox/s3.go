package sandbox

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hactl-dev/hactl/sandbox/internal/proc"
)

// Bucket is the bucket the sandbox creates for seed generations.
const Bucket = "hactl-seeds"

// startVersityGW runs versitygw on a free loopback port with freshly
// generated root credentials (passed in its environment, never on its
// command line), and creates Bucket.
func startVersityGW(ctx context.Context, binDir string, l layout) (*proc.Process, S3, error) {
	s3 := S3{Region: "us-east-1", Bucket: Bucket, AccessKey: "hactl" + randHex(8), SecretKey: randHex(24)}
	if err := os.MkdirAll(l.s3Root(), 0o700); err != nil {
		return nil, s3, err
	}
	for attempt := 1; ; attempt++ {
		ports, err := proc.FreePorts("127.0.0.1", 1)
		if err != nil {
			return nil, s3, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		s3.Endpoint = "http://" + addr
		p, err := proc.Start(proc.Spec{
			Name: "versitygw",
			Path: filepath.Join(binDir, "versitygw"),
			Args: []string{"--port", addr, "--region", s3.Region, "--quiet", "posix", l.s3Root()},
			Env: []string{
				"ROOT_ACCESS_KEY=" + s3.AccessKey,
				"ROOT_SECRET_KEY=" + s3.SecretKey,
				"HOME=" + l.versitygw(),
			},
			LogPath: filepath.Join(l.versitygw(), "logs", "versitygw.log"),
			PidPath: filepath.Join(l.versitygw(), "pids", "versitygw"+proc.PidFileSuffix),
		})
		if err != nil {
			return nil, s3, err
		}
		err = proc.Wait(ctx, 100*time.Millisecond, []*proc.Process{p}, func(ctx context.Context) error {
			return s3.createBucket(ctx)
		})
		if err == nil {
			return p, s3, nil
		}
		retry := p.Exited() && proc.AddrInUse(p) && attempt < 3
		_ = p.Stop(5 * time.Second)
		if !retry {
			return nil, s3, fmt.Errorf("starting versitygw: %w", err)
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// createBucket creates the bucket (succeeding if this account owns it
// already), signing the request with AWS Signature Version 4.
func (s S3) createBucket(ctx context.Context) error {
	resp, err := s.do(ctx, http.MethodPut, "/"+s.Bucket, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "BucketAlreadyOwnedByYou") {
		return nil
	}
	return fmt.Errorf("creating bucket %s: %s: %s", s.Bucket, resp.Status, b)
}

// do sends a SigV4-signed, path-style request for path with body.
func (s S3) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.Endpoint+path, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-date", amzDate)
	req.Header.Set("x-amz-content-sha256", payload)
	host := req.URL.Host
	canonical := strings.Join([]string{
		method,
		req.URL.EscapedPath(),
		req.URL.RawQuery,
		"host:" + host + "\nx-amz-content-sha256:" + payload + "\nx-amz-date:" + amzDate + "\n",
		"host;x-amz-content-sha256;x-amz-date",
		payload,
	}, "\n")
	scope := day + "/" + s.Region + "/s3/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := []byte("AWS4" + s.SecretKey)
	for _, part := range []string{day, s.Region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.AccessKey+"/"+scope+
		", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="+sig)
	return http.DefaultClient.Do(req)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
