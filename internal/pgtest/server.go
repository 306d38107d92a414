package pgtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	// EnvURL names a server to use instead of starting one: a postgres://
	// URL of a role allowed to CREATE DATABASE.
	EnvURL = "HERALD_TEST_DATABASE_URL"
	// EnvFsync "on" starts the cluster with fsync and synchronous commits,
	// for benchmarks that pay for durability.
	EnvFsync = "HERALD_TEST_PG_FSYNC"
)

// installHint is the end of every error about missing binaries.
const installHint = "install PostgreSQL's server binaries (./test.sh does; Debian/Ubuntu: apt-get install postgresql) " +
	"or set " + EnvURL + " to a postgres:// URL of a server where the role may CREATE DATABASE"

// Server is a throwaway cluster Start began, or the external one of EnvURL.
type Server struct {
	URL string // of the maintenance database ("postgres"), as a superuser or EnvURL's role

	external bool
	bin      string // directory holding pg_ctl and initdb
	dir      string // temporary directory: data/, server.log, the socket
	runAs    string // user to run pg_ctl as ("" = the current user)
	port     int
}

// External reports whether the server is EnvURL's, which Restart and Stop
// leave alone.
func (s *Server) External() bool { return s.external }

// Dir returns the throwaway cluster's directory ("" for an external server):
// data/ is the data directory and server.log the server's log.
func (s *Server) Dir() string { return s.dir }

// Start returns EnvURL's server or starts a cluster; errors say what is
// missing and how to get it.
func Start() (*Server, error) {
	if raw := os.Getenv(EnvURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("pgtest: %s must be a postgres:// URL", EnvURL)
		}
		return &Server{URL: raw, external: true}, nil
	}
	return startCluster()
}

// pgCtlPath is pg_ctl on PATH, else the newest /usr/lib/postgresql/*/bin/pg_ctl.
func pgCtlPath() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(found) == 0 {
		return "", fmt.Errorf("pgtest: no pg_ctl on PATH or under /usr/lib/postgresql/*/bin: %s", installHint)
	}
	slices.SortFunc(found, func(a, b string) int { return majorOf(b) - majorOf(a) })
	return found[0], nil
}

func majorOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func startCluster() (*Server, error) {
	pgctl, err := pgCtlPath()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: filepath.Dir(pgctl)}
	if _, err := os.Stat(filepath.Join(s.bin, "initdb")); err != nil {
		return nil, fmt.Errorf("pgtest: %s has no initdb beside it: %s", pgctl, installHint)
	}
	if os.Geteuid() == 0 {
		s.runAs = "postgres"
	}
	if s.dir, err = os.MkdirTemp("", "herald-pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: temporary directory: %w", err)
	}
	if err := s.boot(); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	return s, nil
}

// boot makes the cluster in s.dir and starts it, on another free port when
// another process took the first before the server bound it.
func (s *Server) boot() (err error) {
	if err := s.chown(s.dir); err != nil {
		return err
	}
	out, err := s.command(filepath.Join(s.bin, "initdb"), "-D", s.dataDir(), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	for try := 0; ; try++ {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.configure(); err == nil {
			err = s.pgCtl("start", "-w", "-t", "60", "-l", s.logPath())
		}
		if err == nil || try == 2 {
			return err
		}
	}
}

// chown gives path to the user the server runs as.
func (s *Server) chown(path string) error {
	if s.runAs == "" {
		return nil
	}
	u, err := user.Lookup(s.runAs)
	if err != nil {
		return fmt.Errorf("pgtest: running as root, the server must run as the %q user, which does not exist: %s", s.runAs, installHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("pgtest: chown %s to %s: %w", path, s.runAs, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// configure writes the settings of a test server into postgresql.auto.conf
// (which initdb created), replacing those of an earlier attempt.
func (s *Server) configure() error {
	durable := os.Getenv(EnvFsync) == "on"
	onOff := map[bool]string{true: "on", false: "off"}
	conf := strings.Join([]string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", s.port),
		fmt.Sprintf("unix_socket_directories = '%s'", s.dir),
		"fsync = " + onOff[durable],
		"synchronous_commit = " + onOff[durable],
		"full_page_writes = " + onOff[durable],
		"max_connections = 300",
		"shared_buffers = '256MB'",
		"log_min_messages = warning",
		"timezone = 'UTC'",
	}, "\n") + "\n"
	path := filepath.Join(s.dataDir(), "postgresql.auto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("pgtest: write %s: %w", path, err)
	}
	return s.chown(path)
}

// command runs name as the server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	if s.runAs == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("runuser", append([]string{"-u", s.runAs, "--", name}, args...)...)
}

func (s *Server) pgCtl(args ...string) error {
	args = append([]string{args[0], "-D", s.dataDir()}, args[1:]...)
	out, err := s.command(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(s.logPath())
		return fmt.Errorf("pgtest: pg_ctl %s: %v\n%s\nserver log:\n%s", args[0], err, out, log[max(0, len(log)-4000):])
	}
	return nil
}

// Restart restarts the cluster (pg_ctl restart -m fast): connections break,
// committed data survives, the port stays. An external server is an error.
func (s *Server) Restart() error {
	if s.external {
		return errors.New("pgtest: cannot restart the external server named by " + EnvURL)
	}
	return s.pgCtl("restart", "-m", "fast", "-w", "-t", "60", "-l", s.logPath())
}

// Stop stops the cluster at once and deletes its directory.
func (s *Server) Stop() error {
	if s.external || s.dir == "" {
		return nil
	}
	err := s.pgCtl("stop", "-m", "immediate", "-w")
	if rmErr := os.RemoveAll(s.dir); err == nil && rmErr != nil {
		err = fmt.Errorf("pgtest: remove %s: %w", s.dir, rmErr)
	}
	return err
}

// databaseURL is the server's URL, which Start parsed, for database name.
func (s *Server) databaseURL(name string) string {
	u, _ := url.Parse(s.URL)
	u.Path = "/" + name
	return u.String()
}
