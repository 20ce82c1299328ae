// Command image builds hactl's agent image (the image restore and capture
// pods run) from the static kubectl-hactl and hactl-capture binaries,
// without a container engine, and
// writes it as an OCI image layout, a `docker save` tarball, to a
// registry, or any of these:
//
//	go run ./hack/image --binary bin/kubectl-hactl --capture-binary bin/hactl-capture \
//	    --version v0.1.0 --out dist/image --tarball dist/hactl-image.tar \
//	    [--push ghcr.io/hactl-dev/hactl:v0.1.0]
//
// The binaries must be built for --platform (default linux/amd64) with
// CGO_ENABLED=0. Timestamps come from SOURCE_DATE_EPOCH (0 when unset), so
// the same inputs give the same digest. make image runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/hactl-dev/hactl/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type pushes []string

func (p *pushes) String() string     { return fmt.Sprint(*p) }
func (p *pushes) Set(s string) error { *p = append(*p, s); return nil }

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var (
		o       image.Options
		repo    = fs.String("repo", image.DefaultRepository, "repository the layout and the tarball name the image in (tagged --version)")
		out     = fs.String("out", "", "write an OCI image layout to this directory (an existing layout there is replaced)")
		tarPath = fs.String("tarball", "", "write a `docker save` tarball to this file (for crane push, skopeo, docker load)")
		push    pushes
	)
	fs.StringVar(&o.Binary, "binary", "", "the static kubectl-hactl binary (required)")
	fs.StringVar(&o.CaptureBinary, "capture-binary", "", "the static hactl-capture binary (required)")
	fs.StringVar(&o.Version, "version", "", "the image version: label and tag, e.g. v0.1.0 (required)")
	fs.StringVar(&o.Commit, "commit", "unknown", "the org.opencontainers.image.revision label")
	fs.StringVar(&o.Platform, "platform", image.DefaultPlatform, "os/arch the binary is built for, e.g. linux/arm64")
	fs.StringVar(&o.CACerts, "ca-certs", image.DefaultCACerts, "PEM CA bundle copied into the image")
	fs.Var(&push, "push", "push the image to this reference, e.g. ghcr.io/hactl-dev/hactl:v0.1.0 (repeatable; credentials as docker's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if o.Binary == "" || o.CaptureBinary == "" || o.Version == "" {
		return fmt.Errorf("--binary, --capture-binary and --version are required")
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a Unix time in seconds", s)
		}
		o.Created = time.Unix(sec, 0)
	}
	tag, err := name.NewTag(*repo + ":" + o.Version)
	if err != nil {
		return fmt.Errorf("--repo %q with --version %q: %w", *repo, o.Version, err)
	}

	img, err := image.Build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	size, err := image.Size(img)
	if err != nil {
		return err
	}
	fmt.Printf("image:    %s (%s)\n", tag, o.Platform)
	fmt.Printf("digest:   %s\n", digest)
	fmt.Printf("size:     %d bytes (manifest, config and compressed layers)\n", size)
	if *out != "" {
		if err := image.WriteLayout(*out, img, tag); err != nil {
			return err
		}
		fmt.Printf("layout:   %s\n", *out)
	}
	if *tarPath != "" {
		if err := image.WriteTarball(*tarPath, img, tag); err != nil {
			return err
		}
		st, err := os.Stat(*tarPath)
		if err != nil {
			return err
		}
		fmt.Printf("tarball:  %s (%d bytes)\n", *tarPath, st.Size())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, ref := range push {
		d, err := image.Push(ctx, ref, img)
		if err != nil {
			return err
		}
		fmt.Printf("pushed:   %s\n", d)
	}
	return nil
}
