package daemon

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/mcp"
)

// mcpSet is the daemon's MCP servers: each running one has a supervisor
// actor (mcp-<name>, a root child). Reload replaces the set from
// config.yaml: removed or changed servers are stopped (their tools leave
// the registry), new or changed ones started.
type mcpSet struct {
	log *slog.Logger
	// initial are the servers of the configuration the daemon started with.
	initial []mcp.ServerConfig

	mu      sync.Mutex
	sys     *actor.ActorSystem
	reg     *tools.Registry
	running map[string]*mcpRunning
}

type mcpRunning struct {
	cfg mcp.ServerConfig
	srv *mcp.Server
	pid *actor.PID
}

// mcpConfigs turns config.yaml entries into server configurations. A stdio
// server's environment is the scrubbed base plus its entry's env.
func (d *Daemon) mcpConfigs(entries []config.MCPServer) ([]mcp.ServerConfig, error) {
	tc := d.cfg.Tools
	out := make([]mcp.ServerConfig, 0, len(entries))
	for _, e := range entries {
		env := append([]string(nil), tc.ChildEnv...)
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+e.Env[k])
		}
		timeout := e.Timeout
		if timeout <= 0 {
			timeout = tc.MCPTimeout
		}
		sc := mcp.ServerConfig{Name: e.Name, Command: e.Command, Args: e.Args, Env: env, URL: e.URL, Headers: e.Headers, CallTimeout: timeout}
		if err := sc.Validate(); err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// names are the servers the daemon started with, for the metrics' labels.
func (m *mcpSet) names() []string {
	out := make([]string, len(m.initial))
	for i, c := range m.initial {
		out[i] = c.Name
	}
	return out
}

// start spawns the supervisors of the initial servers.
func (m *mcpSet) start(sys *actor.ActorSystem, reg *tools.Registry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sys, m.reg = sys, reg
	for _, c := range m.initial {
		if err := m.spawnLocked(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *mcpSet) spawnLocked(c mcp.ServerConfig) error {
	srv := mcp.NewServer(c)
	pid, err := m.sys.Root.SpawnNamed(mcp.SupervisorProps(srv, m.reg, m.log, mcp.DefaultBackoff), "mcp-"+c.Name)
	if err != nil {
		return fmt.Errorf("start mcp server %s: %w", c.Name, err)
	}
	m.running[c.Name] = &mcpRunning{cfg: c, srv: srv, pid: pid}
	return nil
}

// reload makes the running servers those of configs. It returns what it
// started and stopped.
func (m *mcpSet) reload(configs []mcp.ServerConfig) (started, stopped []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sys == nil {
		return nil, nil, fmt.Errorf("the daemon is not running")
	}
	want := make(map[string]mcp.ServerConfig, len(configs))
	for _, c := range configs {
		want[c.Name] = c
	}
	for name, r := range m.running {
		if c, ok := want[name]; ok && reflect.DeepEqual(c, r.cfg) {
			delete(want, name) // unchanged: keep it running
			continue
		}
		// The supervisor's Stopping closes the server and removes its tools.
		if err := m.sys.Root.StopFuture(r.pid).Wait(); err != nil {
			return started, stopped, fmt.Errorf("stop mcp server %s: %w", name, err)
		}
		delete(m.running, name)
		stopped = append(stopped, name)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := m.spawnLocked(want[name]); err != nil {
			return started, stopped, err
		}
		started = append(started, name)
	}
	sort.Strings(stopped)
	return started, stopped, nil
}

// status returns each running server's health, sorted by name.
func (m *mcpSet) status() []mcp.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]mcp.Status, 0, len(m.running))
	for _, r := range m.running {
		out = append(out, r.srv.Status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// close ends every server (child processes exit); the daemon calls it
// after the runtime stopped.
func (m *mcpSet) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.running {
		_ = r.srv.Close()
	}
}

// startMCP spawns one supervisor actor per configured MCP server; each
// connects in the background and registers its tools in reg once it has
// listed them. The servers are closed after the runtime stopped (turns in
// their grace period may still call them).
func (d *Daemon) startMCP(reg *tools.Registry) error {
	d.closers = append(d.closers, d.mcp.close)
	return d.mcp.start(d.rt.System(), reg)
}

// applyMCP makes the running MCP servers those of entries (a reload of
// config.yaml: SIGHUP, hermesd reload, POST /api/reload): removed or
// changed servers are stopped, new or changed ones started, unchanged ones
// keep running. An invalid list changes nothing. It reports whether
// anything changed.
func (d *Daemon) applyMCP(entries []config.MCPServer) (bool, error) {
	configs, err := d.mcpConfigs(entries)
	if err != nil {
		return false, fmt.Errorf("mcp servers: %w", err)
	}
	started, stopped, err := d.mcp.reload(configs)
	if len(started)+len(stopped) > 0 || err != nil {
		d.log.Info("mcp servers reloaded", "started", started, "stopped", stopped, "err", err)
	}
	return len(started)+len(stopped) > 0, err
}

// MCPStatus returns the health of every configured MCP server.
func (d *Daemon) MCPStatus() []mcp.Status { return d.mcp.status() }

// mcpInspect is the MCP servers' health for /api/status and /status.
func (d *Daemon) mcpInspect() []inspect.MCPStatus {
	st := d.MCPStatus()
	out := make([]inspect.MCPStatus, len(st))
	for i, s := range st {
		out[i] = inspect.MCPStatus{Name: s.Name, Transport: s.Transport, Connected: s.Connected, Tools: len(s.Tools), Restarts: s.Restarts, LastError: s.LastError}
	}
	return out
}

// handleMCP serves GET /api/mcp: each MCP server's transport, health,
// restarts and tools.
func (d *Daemon) handleMCP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": d.MCPStatus()})
}
