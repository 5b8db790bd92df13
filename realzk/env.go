package realzk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvServers is the environment variable that points realzk at a running
// ensemble: ZK_SERVERS=host:port,host:port,…
const EnvServers = "ZK_SERVERS"

// FromEnv returns the addresses in ZK_SERVERS, or nil when it is unset or
// empty. A malformed entry is an error that names it.
func FromEnv() ([]string, error) {
	raw := strings.TrimSpace(os.Getenv(EnvServers))
	if raw == "" {
		return nil, nil
	}
	addrs, err := ParseServers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvServers, raw, err)
	}
	return addrs, nil
}

// ParseServers splits a connect string "host:port,host:port,…" into
// addresses, checking that each has a host and a numeric port.
func ParseServers(connect string) ([]string, error) {
	var addrs []string
	for entry := range strings.SplitSeq(connect, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		host, port, err := net.SplitHostPort(entry)
		if err != nil {
			return nil, fmt.Errorf("server %q: want host:port, e.g. 127.0.0.1:2181: %w", entry, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("server %q: want host:port with a port from 1 to 65535, e.g. 127.0.0.1:2181", entry)
		}
		addrs = append(addrs, entry)
	}
	if len(addrs) == 0 {
		return nil, errors.New("no servers: want host:port,host:port,…")
	}
	return addrs, nil
}

// attach returns an Ensemble for the running servers at cfg.Addrs after
// checking that every one of them accepts TCP connections.
func attach(ctx context.Context, cfg Config) (*Ensemble, error) {
	addrs, err := ParseServers(strings.Join(cfg.Addrs, ","))
	if err != nil {
		return nil, fmt.Errorf("attach to ensemble: %w", err)
	}
	var unreachable []string
	for _, addr := range addrs {
		dialCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var dialer net.Dialer
		conn, err := dialer.DialContext(dialCtx, "tcp", addr)
		cancel()
		if err != nil {
			unreachable = append(unreachable, fmt.Sprintf("%s (%v)", addr, err))
			continue
		}
		conn.Close()
	}
	if len(unreachable) > 0 {
		return nil, fmt.Errorf("ensemble %s is unreachable: cannot connect to %s; start it, or unset %s to let realzk start its own servers",
			strings.Join(addrs, ","), strings.Join(unreachable, ", "), EnvServers)
	}
	return &Ensemble{cfg: cfg, addrs: addrs}, nil
}
