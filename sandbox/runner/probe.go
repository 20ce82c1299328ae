package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"syscall"
)

// check runs one probe attempt.
func (p *Probe) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	switch p.Kind {
	case ProbeHTTP:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "kube-probe/hactl-sandbox")
		hc := &http.Client{Transport: &http.Transport{
			DisableKeepAlives: true,
			// Like the kubelet, an HTTPS probe does not verify the certificate.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		}}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case ProbeTCP:
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", p.Addr)
		if err != nil {
			return err
		}
		return c.Close()
	case ProbeExec:
		e := p.Exec
		cmd := &exec.Cmd{Path: e.Path, Args: e.Argv, Env: e.Env, Dir: e.Dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return errors.New("exec probe timed out")
		}
	}
	return fmt.Errorf("unknown probe kind %v", p.Kind)
}

// prober tracks a probe's thresholds: it turns attempt results into a
// ready/not-ready verdict the way the kubelet does.
type prober struct {
	p                *Probe
	ready            bool
	successes, fails int
}

// observe records one attempt and reports the verdict after it.
func (pr *prober) observe(err error) bool {
	if err == nil {
		pr.fails = 0
		pr.successes++
		if pr.successes >= pr.p.SuccessThreshold {
			pr.ready = true
		}
	} else {
		pr.successes = 0
		pr.fails++
		if pr.fails >= pr.p.FailureThreshold {
			pr.ready = false
		}
	}
	return pr.ready
}
