package cnpgstandin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SocketDirectory is cnpg's postgres.SocketDirectory (PGHOST in the pod),
// named in the errors /pg/status reports as cnpg's driver words them.
const SocketDirectory = "/controller/run"

// confFile is the file the stand-in writes its PostgreSQL settings into,
// included from postgresql.conf (cnpg writes custom.conf and
// override.conf: the stand-in keeps one file of its own).
const confFile = "cnpg-standin.conf"

// postgres runs one PostgreSQL instance as a child process.
type postgres struct {
	bin, data, sock, addr string
	port                  int
	logf                  func(string, ...any)

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *postgres) tool(name string) string { return filepath.Join(p.bin, name) }

// running reports whether the postmaster the stand-in started runs.
func (p *postgres) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// initialised reports whether the data directory holds a cluster.
func (p *postgres) initialised() bool {
	_, err := os.Stat(filepath.Join(p.data, "PG_VERSION"))
	return err == nil
}

func (p *postgres) run(ctx context.Context, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", filepath.Base(argv[0]), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// initdb makes a new cluster, as cnpg's bootstrap initdb does (superuser
// postgres, data checksums off, locale C).
func (p *postgres) initdb(ctx context.Context) error {
	_, err := p.run(ctx, p.tool("initdb"), "-D", p.data, "--username", "postgres", "--encoding", "UTF8",
		"--locale", "C", "--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync")
	return err
}

// basebackup copies the primary at host into the data directory.
func (p *postgres) basebackup(ctx context.Context, host, app string) error {
	_ = os.RemoveAll(p.data)
	_, err := p.run(ctx, p.tool("pg_basebackup"), "-D", p.data, "-h", host, "-p", fmt.Sprint(p.port),
		"-U", ReplicationUser, "-X", "stream", "--checkpoint", "fast", "--no-sync",
		"-d", "application_name="+app+"-join")
	if err != nil {
		return err
	}
	return os.Chmod(p.data, 0o700)
}

// configure writes the stand-in's settings and pg_hba.conf. upstream is
// the primary's address for a standby ("" for a primary); app is the
// instance's name (its application_name upstream).
func (p *postgres) configure(upstream, app string) error {
	conf := filepath.Join(p.data, "postgresql.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		return err
	}
	include := "include_if_exists '" + confFile + "'"
	if !bytes.Contains(b, []byte(include)) {
		b = append(b, []byte("\n"+include+"\n")...)
		if err := os.WriteFile(conf, b, 0o600); err != nil {
			return err
		}
	}
	settings := []string{
		"listen_addresses = '" + p.addr + "'",
		fmt.Sprintf("port = %d", p.port),
		"unix_socket_directories = '" + p.sock + "'",
		"shared_buffers = '32MB'",
		"max_connections = 50",
		"wal_level = 'logical'",
		"hot_standby = 'on'",
		"max_wal_senders = 10",
		"max_replication_slots = 10",
		"wal_keep_size = '512MB'",
		"wal_log_hints = 'on'",
		"wal_receiver_status_interval = '1s'",
		"hot_standby_feedback = 'on'",
		"password_encryption = 'scram-sha-256'",
		"logging_collector = 'off'",
		"cluster_name = '" + app + "'",
		"recovery_target_timeline = 'latest'",
	}
	signal := filepath.Join(p.data, "standby.signal")
	if upstream != "" {
		settings = append(settings, fmt.Sprintf("primary_conninfo = 'host=%s port=%d user=%s application_name=%s sslmode=disable'",
			upstream, p.port, ReplicationUser, app))
		if err := os.WriteFile(signal, nil, 0o600); err != nil {
			return err
		}
	} else if err := os.Remove(signal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.data, confFile), []byte(strings.Join(settings, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	// cnpg's pg_hba.conf (pkg/management/postgres/configuration.go) lets
	// the streaming_replica user in with its TLS certificate; the sandbox
	// has no TLS, so replication connections from the sandbox's loopback
	// are trusted. Everyone else logs in with a password.
	hba := strings.Join([]string{
		"local all all trust",
		"host replication " + ReplicationUser + " 127.0.0.0/8 trust",
		"host all all all scram-sha-256",
		"host replication all all scram-sha-256",
	}, "\n") + "\n"
	return os.WriteFile(filepath.Join(p.data, "pg_hba.conf"), []byte(hba), 0o600)
}

// start runs the postmaster as a child, its log on the stand-in's
// stderr (the container's log, as cnpg's instance manager relays it), and
// waits until it accepts connections.
func (p *postgres) start(ctx context.Context) error {
	if p.running() {
		return nil
	}
	_ = os.MkdirAll(p.sock, 0o700)
	cmd := exec.Command(p.tool("postgres"), "-D", p.data)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.logf("postgres exited: %v", err)
		close(done)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if !p.running() {
			return errors.New("postgres exited while starting")
		}
		if code := p.isReady(ctx); code == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("postgres did not accept connections within two minutes")
}

// stop shuts the postmaster down (fast: SIGINT) and waits.
func (p *postgres) stop(timeout time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || done == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-done
	}
}

// isReady runs pg_isready against the socket and returns its exit code
// (0 accepting, 1 rejecting, 2 no response, 3 no attempt).
func (p *postgres) isReady(ctx context.Context) int {
	cmd := exec.CommandContext(ctx, p.tool("pg_isready"), "-h", p.sock, "-p", fmt.Sprint(p.port), "-U", "postgres", "-d", "postgres", "-q")
	err := cmd.Run()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 3
}

// errNotRunning is what cnpg's driver (pgx) says when the socket is
// missing, with the pod's socket directory.
var errNotRunning = fmt.Errorf("failed to connect to `user=postgres database=postgres`: %s/.s.PGSQL.5432 (%s): "+
	"dial error: dial unix %s/.s.PGSQL.5432: connect: no such file or directory",
	SocketDirectory, SocketDirectory, SocketDirectory)

// query runs sql as postgres over the socket and returns its rows, each
// split into fields.
func (p *postgres) query(ctx context.Context, sql string) ([][]string, error) {
	if _, err := os.Stat(filepath.Join(p.sock, fmt.Sprintf(".s.PGSQL.%d", p.port))); err != nil {
		return nil, errNotRunning
	}
	return psql(ctx, p.tool("psql"), []string{"-h", p.sock, "-p", fmt.Sprint(p.port), "-U", "postgres", "-d", "postgres"}, nil, sql)
}

// psql runs sql with psql and conn's arguments, unaligned, tuples only,
// fields separated by the unit separator.
func psql(ctx context.Context, bin string, conn, env []string, sql string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append([]string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-F", "\x1f"}, conn...)
	args = append(args, "-c", sql)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		msg = strings.TrimPrefix(msg, "psql: ")
		msg = strings.TrimPrefix(msg, "error: ")
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		rows = append(rows, strings.Split(line, "\x1f"))
	}
	return rows, nil
}

// exitCode is the exit code of a command's error (3 when it did not run).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 3
}
