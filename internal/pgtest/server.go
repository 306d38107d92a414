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

// Environment variables the harness reads.
const (
	// EnvURL names an existing server to use instead of starting one: a
	// postgres:// URL of a role allowed to CREATE DATABASE.
	EnvURL = "HERALD_TEST_DATABASE_URL"
	// EnvFsync set to "on" starts the throwaway cluster with fsync and
	// synchronous commits, for benchmarks that should pay for durability.
	EnvFsync = "HERALD_TEST_PG_FSYNC"
)

// installHint is the end of every error about missing binaries.
const installHint = "install PostgreSQL's server binaries (Debian/Ubuntu: apt-get install postgresql) " +
	"or set " + EnvURL + " to a postgres:// URL of a server where the role may CREATE DATABASE"

// Server is a PostgreSQL server for tests: either a throwaway cluster the
// harness started, or an external one named by EnvURL.
type Server struct {
	// URL connects to the server's maintenance database ("postgres") as a
	// superuser (or the external URL's role).
	URL string

	external bool
	bin      string // directory holding pg_ctl and initdb
	dir      string // temporary directory: data/, server.log, the socket
	runAs    string // user to run pg_ctl as ("" = the current user)
	port     int
}

// External reports whether the server was named by EnvURL (and so cannot
// be restarted or stopped by the harness).
func (s *Server) External() bool { return s.external }

// Dir returns the throwaway cluster's directory ("" for an external server):
// data/ is the data directory and server.log the server's log.
func (s *Server) Dir() string { return s.dir }

// Start returns the server named by EnvURL, or starts a throwaway cluster.
// Errors say what is missing and how to get it.
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

// PgCtl returns the path of the pg_ctl binary the harness uses: the one on
// PATH, else the newest /usr/lib/postgresql/*/bin/pg_ctl.
func PgCtl() (string, error) {
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
	pgctl, err := PgCtl()
	if err != nil {
		return nil, err
	}
	bin := filepath.Dir(pgctl)
	initdb := filepath.Join(bin, "initdb")
	if _, err := os.Stat(initdb); err != nil {
		return nil, fmt.Errorf("pgtest: %s has no initdb beside it: %s", pgctl, installHint)
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		s.runAs = "postgres"
	}
	s.dir, err = os.MkdirTemp("", "herald-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: temporary directory: %w", err)
	}
	if s.runAs != "" {
		if err := chownTo(s.dir, s.runAs); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
	if err := s.initdb(); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	// A free loopback port. Another process may take it before the server
	// binds it; then start fails and we try another.
	for try := 0; ; try++ {
		s.port, err = freePort()
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
		if err = s.configure(); err == nil {
			err = s.pgCtl("start", "-w", "-t", "60", "-l", s.logPath())
		}
		if err == nil {
			break
		}
		if try == 2 {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	return s, nil
}

func chownTo(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("pgtest: running as root, the server must run as the %q user, which does not exist: %s", name, installHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("pgtest: chown %s to %s: %w", dir, name, err)
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

func (s *Server) initdb() error {
	out, err := s.command(filepath.Join(s.bin, "initdb"), "-D", s.dataDir(), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	return nil
}

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
	if s.runAs != "" {
		return chownTo(path, s.runAs)
	}
	return nil
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
		return fmt.Errorf("pgtest: pg_ctl %s: %v\n%s\nserver log:\n%s", args[0], err, out, tail(log, 4000))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Restart restarts a throwaway cluster (pg_ctl restart -m fast): every
// connection breaks, committed data survives, and the server listens on the
// same port when Restart returns. An external server cannot be restarted.
func (s *Server) Restart() error {
	if s.external {
		return errors.New("pgtest: cannot restart the external server named by " + EnvURL)
	}
	return s.pgCtl("restart", "-m", "fast", "-w", "-t", "60", "-l", s.logPath())
}

// Stop stops a throwaway cluster at once and deletes its directory. For an
// external server it does nothing.
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

// databaseURL returns the server's URL with the database replaced by name.
func (s *Server) databaseURL(name string) (string, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return "", fmt.Errorf("pgtest: server URL cannot be parsed")
	}
	u.Path = "/" + name
	return u.String(), nil
}
