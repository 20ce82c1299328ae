package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exec runs argv in container of pod ns/name (the first container when
// container is ""), as `kubectl exec` would: as the container's user,
// with its environment and working directory, and argv rewritten as the
// container's own arguments are (127.0.0.1 is the member's address, mount
// paths are host directories). It returns the combined output; a non-zero
// exit is an error carrying the output's end.
func (r *Runner) Exec(ctx context.Context, ns, name, container string, argv []string) (string, error) {
	r.mu.Lock()
	m := r.byName[ns+"/"+name]
	r.mu.Unlock()
	if m == nil {
		return "", fmt.Errorf("%s/%s: %w", ns, name, ErrNoMember)
	}
	c, err := m.container(container)
	if err != nil {
		return "", err
	}
	return c.exec(ctx, argv)
}

// container returns the named container ("" for the first) once it has
// started.
func (m *member) container(name string) (*container, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.containers {
		if name == "" || c.spec.Name == name {
			return c, nil
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%s has not started yet", m.key)
	}
	return nil, fmt.Errorf("%s has no container %q", m.key, name)
}

// exec runs argv as the container's current process runs.
func (c *container) exec(ctx context.Context, argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("exec: no command")
	}
	c.mu.Lock()
	p, pe, l, spec := c.cur, c.pe, c.launch, c.spec
	c.mu.Unlock()
	if p == nil || p.exited() {
		return "", fmt.Errorf("%s: container %s is not running", c.m.key, spec.Name)
	}
	args, err := Substitute(pe, &spec, argv)
	if err != nil {
		return "", err
	}
	exe, err := lookPath(args[0], envValue(l.Env, "PATH"))
	if err != nil {
		return "", err
	}
	run := l
	run.Path, run.Argv = exe, args
	path, cargs, dir := run.command()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, cargs[1:]...)
	cmd.Args = cargs
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = l.Env, dir, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: l.Credential, AmbientCaps: l.AmbientCaps}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: exec %s: %w: %s", c.m.key, strings.Join(argv, " "), err, lastLine(out.String()))
	}
	return out.String(), nil
}

// promote runs `pg_ctl promote -D <data dir>` in the member's container,
// as its user: the data directory is the container's
// PATRONI_POSTGRESQL_DATA_DIR (else PGDATA), pg_ctl the one in
// PATRONI_POSTGRESQL_BIN_DIR (else on PATH).
func (r *Runner) promote(ctx context.Context, m *member) error {
	c, err := m.container("")
	if err != nil {
		return err
	}
	c.mu.Lock()
	env := c.launch.Env
	c.mu.Unlock()
	data := envValue(env, "PATRONI_POSTGRESQL_DATA_DIR")
	if data == "" {
		data = envValue(env, "PGDATA")
	}
	if data == "" {
		return fmt.Errorf("%s: no PostgreSQL data directory (PATRONI_POSTGRESQL_DATA_DIR or PGDATA) in its environment", m.key)
	}
	pgctl := "pg_ctl"
	if bin := envValue(env, "PATRONI_POSTGRESQL_BIN_DIR"); bin != "" {
		pgctl = filepath.Join(bin, "pg_ctl")
	}
	out, err := c.exec(ctx, []string{pgctl, "promote", "-D", data})
	if err != nil {
		return err
	}
	m.logf("promoted: %s", lastLine(out))
	return nil
}

// postgresTitle matches a PostgreSQL auxiliary process by the title it
// sets ("postgres: <cluster>: startup recovering …", "postgres:
// walreceiver streaming …").
func postgresTitle(kind string) func(string) bool {
	return func(cmdline string) bool {
		if !strings.HasPrefix(cmdline, "postgres: ") {
			return false
		}
		for _, f := range strings.Split(cmdline, ": ")[1:] {
			if f == kind || strings.HasPrefix(f, kind+" ") {
				return true
			}
		}
		return false
	}
}

// isPostmaster matches PostgreSQL's postmaster: the postgres binary run
// with its own arguments (its children retitle themselves "postgres: …").
func isPostmaster(cmdline string) bool {
	f := strings.Fields(cmdline)
	return len(f) > 0 && !strings.HasPrefix(cmdline, "postgres: ") && filepath.Base(f[0]) == "postgres"
}

// envValue returns the last value of k in env ("" when unset).
func envValue(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			v = kv[len(k)+1:]
		}
	}
	return v
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
