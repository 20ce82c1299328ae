package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hactl-dev/hactl/artifact"
)

// Region is the region the server is started with.
const Region = "us-east-1"

// Server is a running versitygw.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials (random).
	AccessKey, SecretKey string
	// Dir holds the server's data (Dir/data) and log (Dir/versitygw.log).
	Dir string

	proc *Process
}

// Start runs versitygw from binDir with its data under dir and waits until
// it answers.
func Start(ctx context.Context, binDir, dir string) (*Server, error) {
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, binDir, dir)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return s, err
		}
	}
}

func start(ctx context.Context, binDir, dir string) (*Server, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{
		Endpoint:  "http://" + addr,
		AccessKey: "hactltest" + randHex(8),
		SecretKey: randHex(24),
		Dir:       dir,
	}
	cmd := exec.Command(filepath.Join(binDir, "versitygw"), "--port", addr, "--region", Region, "--quiet", "posix", data)
	cmd.Env = []string{
		"ROOT_ACCESS_KEY=" + s.AccessKey,
		"ROOT_SECRET_KEY=" + s.SecretKey,
		"HOME=" + dir,
		"PATH=" + os.Getenv("PATH"),
	}
	if s.proc, err = StartProcess("versitygw", filepath.Join(dir, "versitygw.log"), cmd); err != nil {
		return nil, err
	}
	err = s.proc.AwaitServing(ctx, 30*time.Second, func(ctx context.Context) error {
		probe, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := s.Client().ListBuckets(probe, &s3.ListBucketsInput{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Stop terminates the server and waits for it.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	return s.proc.Stop()
}

// Client is an S3 client for the server with its root credentials (for
// test set-up and tampering, not for the code under test).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates a bucket (a random name when name is empty) and
// returns its name.
func (s *Server) CreateBucket(ctx context.Context, name string) (string, error) {
	if name == "" {
		name = "hactl-" + randHex(6)
	}
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", fmt.Errorf("creating bucket %s: %w", name, err)
	}
	return name, nil
}

// URL is the store URL of bucket/prefix on this server. It carries no
// credentials.
func (s *Server) URL(bucket, prefix string) string {
	p := strings.Trim(prefix, "/")
	if p != "" {
		p = "/" + p
	}
	return "s3://" + bucket + p + "?endpoint=" + s.Endpoint + "&use_path_style=true&region=" + Region
}

// Credentials are the server's root credentials as artifact.Credentials.
func (s *Server) Credentials() *artifact.Credentials {
	return &artifact.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
}

// Env is the environment that hands the credentials to a child process or
// to the AWS SDK's default chain.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=" + Region}
}

// Secrets are the values that must never appear in any output.
func (s *Server) Secrets() []string { return []string{s.AccessKey, s.SecretKey} }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
