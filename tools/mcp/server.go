// Package mcp connects hermesd to MCP servers with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). Each configured server, stdio
// (command, args, env) or streamable HTTP (url, headers), is supervised by
// its own actor: it is started at boot, restarted with backoff when it dies,
// and its tools are offered to the model as mcp_<server>_<tool> with their
// JSON schemas. Calls are bounded by a timeout, and results (text, images,
// errors) are mapped to the model's tool result.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of a server.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
)

// ServerConfig is one entry of mcp_servers in config.yaml.
type ServerConfig struct {
	// Name is the entry's key; it becomes part of every tool's name.
	Name string
	// Command, Args and Env run a stdio server. Env is the child's whole
	// environment: the daemon passes a scrubbed base plus the entry's env,
	// never its own secrets.
	Command string
	Args    []string
	Env     []string
	// URL and Headers reach a streamable HTTP server.
	URL     string
	Headers map[string]string
	// CallTimeout bounds one tool call; ConnectTimeout the start-up
	// handshake and tool listing.
	CallTimeout    time.Duration
	ConnectTimeout time.Duration
}

// Validate reports an entry that cannot work.
func (c ServerConfig) Validate() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("mcp server %q: names are letters, digits, _ and -", c.Name)
	}
	switch {
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("mcp server %s: set command or url, not both", c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("mcp server %s: command (stdio) or url (HTTP) is required", c.Name)
	case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return fmt.Errorf("mcp server %s: url must be http(s), got %q", c.Name, c.URL)
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Transport returns the SDK transport for the entry: a fresh child process
// or HTTP connection per call.
func (c ServerConfig) transport() sdk.Transport {
	if c.Command != "" {
		cmd := exec.Command(c.Command, c.Args...)
		cmd.Env = c.Env
		// Terminate a stdio server quickly on close: its calls are already
		// failed by then.
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := &http.Client{Transport: headerTransport{headers: c.Headers, next: http.DefaultTransport}}
	return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true}
}

// headerTransport adds the configured headers (an API key) to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// Status is a server's health as /status, doctor and /mcp show it.
type Status struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	Connected bool      `json:"connected"`
	Tools     []string  `json:"tools"`
	Restarts  int       `json:"restarts"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"`
}

// Server is one configured server as the tools and the supervisor share it:
// the supervisor connects and publishes the live session; tool calls use
// whichever session is live when they start.
type Server struct {
	cfg     ServerConfig
	session atomic.Pointer[sdk.ClientSession]
	closed  atomic.Bool

	mu     sync.Mutex
	status Status
}

// NewServer returns the handle of a configured server, not yet connected.
func NewServer(cfg ServerConfig) *Server {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	kind := "stdio"
	if cfg.URL != "" {
		kind = "http"
	}
	return &Server{cfg: cfg, status: Status{Name: cfg.Name, Transport: kind, Since: time.Now()}}
}

// Name is the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// Status returns a copy of the server's health.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tools = append([]string(nil), st.Tools...)
	return st
}

func (s *Server) setStatus(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
}

// Close ends the live session (a stdio server's process exits) and keeps
// the supervisor from connecting again. The daemon calls it on shutdown,
// after the turns that might still call the server have ended.
func (s *Server) Close() error {
	s.closed.Store(true)
	if cs := s.session.Swap(nil); cs != nil {
		return cs.Close()
	}
	return nil
}

// ErrNotConnected is returned by a call while the server is down or
// restarting.
var ErrNotConnected = errors.New("mcp server is not connected")

// call runs one tool call on the live session, bounded by the call timeout.
func (s *Server) call(ctx context.Context, tool string, args map[string]any) (*sdk.CallToolResult, error) {
	cs := s.session.Load()
	if cs == nil {
		st := s.Status()
		if st.LastError != "" {
			return nil, fmt.Errorf("%w (%s; restarting)", ErrNotConnected, st.LastError)
		}
		return nil, ErrNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %v", s.cfg.CallTimeout)
		}
		return nil, err
	}
	return res, nil
}

// connect starts the server (or opens the HTTP session), and lists its
// tools.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, []*sdk.Tool, error) {
	if s.closed.Load() {
		return nil, nil, errors.New("closed")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "hermesd", Version: "1"}, nil)
	cs, err := client.Connect(ctx, s.cfg.transport(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	var ts []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, fmt.Errorf("list tools: %w", err)
		}
		ts = append(ts, t)
	}
	return cs, ts, nil
}
