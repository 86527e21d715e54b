// Package daemon wires hermesd together from its configuration: the store,
// the model, the tools, the platforms, the actor runtime and the HTTP
// listener. cmd/hermesd calls it; end-to-end tests call it too, so what they
// test is what runs.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/cluster"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/identity"
	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/api"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/web"
	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
	"golang.org/x/net/netutil"
)

// Options are what tests may replace; the zero value is the daemon as it
// runs in production.
type Options struct {
	// Model replaces the model built from the configuration.
	Model model.Completer
	// ExtraTools are registered beside the built-in ones.
	ExtraTools []tools.Tool
	// ReplyTimeout bounds how long POST /api/chat waits; 0 means 2 minutes.
	ReplyTimeout time.Duration
	// Load re-reads the configuration for POST /api/reload (cmd/hermesd
	// passes config.Load over the process environment); nil turns the
	// endpoint off.
	Load func() (config.Config, error)
	// LogLevel, when set, is the level of the daemon's logger, which a
	// reload changes live.
	LogLevel *slog.LevelVar
	// HTTP bounds the listener; zero fields take DefaultHTTPLimits.
	HTTP HTTPLimits
}

// Daemon is a wired, running hermesd.
type Daemon struct {
	cfg   config.Config
	log   *slog.Logger
	store *store.Store
	rt    *actors.Runtime
	web   *web.Adapter
	guard *identity.Guard
	// telegram is set when TELEGRAM_BOT_TOKEN is (tests read its webhook
	// address from it).
	telegram *telegram.Adapter
	skills   tools.SkillSources
	memories *memoryCache
	// mcp are the MCP servers and their supervisors (daemon/mcp.go).
	mcp *mcpSet
	// obs holds metrics, the live actor tree and recent errors.
	obs    *observation
	mux    *http.ServeMux
	srv    *http.Server
	limits HTTPLimits
	// closers run in reverse order on Close (TTS pool, …).
	closers []func()
	opts    Options
	// reload holds what a reload swaps (allowlists, TTS provider).
	reload reloadState
	// placement is this member of the cluster; nil on a single node.
	placement *cluster.Placement
	// fatal carries what makes a cluster member stop on its own (a pause
	// longer than its leases); Serve then shuts down and returns it.
	fatal chan error
	// router is the model catalog, nil for the offline assistant or a
	// test's model (daemon/models.go).
	router *model.Router
	// media stores and reads the photos and documents users send
	// (daemon/media.go).
	media *media.Ingester
	// api is the OpenAI-compatible endpoint (platforms/api).
	api *api.Adapter
}

// New opens the store and starts the runtime and the platforms. The HTTP
// listener is started by Serve.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) (*Daemon, error) {
	obs := newObservation()
	log = obs.wrap(log) // warnings and errors of every component reach /status
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return nil, fmt.Errorf("create HERMES_HOME %s: %w", cfg.Home, err)
	}
	st, err := store.Open(ctx, cfg.Database(), store.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	d := &Daemon{cfg: cfg, log: log, store: st, guard: &identity.Guard{Log: log}, obs: obs, opts: o, limits: o.HTTP.withDefaults()}
	d.reload.applied = cfg
	fail := func(err error) (*Daemon, error) {
		d.closeAll()
		_ = st.Close()
		return nil, err
	}

	m, router, modelName, err := d.buildModel(cfg, log, o)
	if err != nil {
		return fail(err)
	}
	d.router = router
	reg, err := d.agentTools(o.ExtraTools)
	if err != nil {
		return fail(fmt.Errorf("tools: %w", err))
	}

	if d.media, err = d.mediaIngester(); err != nil {
		return fail(err)
	}
	d.web = web.New(web.Options{Log: log, MaxStreamsPerClient: d.limits.StreamsPerClient, Media: d.media,
		History: d.chatHistory, Transcriber: d.webTranscriber()})
	adapters := []platforms.Adapter{d.web}
	d.api = api.New(api.Options{Log: log})
	adapters = append(adapters, d.api)
	more, err := d.platformAdapters()
	if err != nil {
		return fail(err)
	}
	adapters = append(adapters, more...)

	rcfg := actors.DefaultConfig()
	rcfg.IdleTimeout = cfg.IdleTimeout
	rcfg.HistoryLimit = cfg.HistoryLimit
	rcfg.MaxToolRounds = cfg.MaxToolRounds
	rcfg.TurnTimeout = cfg.TurnTimeout
	rcfg.DefaultBusy = messages.BusyPolicy(cfg.BusyPolicy)
	rcfg.ModelName = modelName
	rcfg.ReviewEvery, rcfg.SweepEvery = cfg.ReviewEvery, cfg.SweepEvery
	rcfg.ContextTokens, rcfg.ToolResultLimit = cfg.ContextTokens, cfg.ToolResultLimit
	rcfg.Vision = cfg.Media.Vision
	if cfg.SystemPrompt != "" {
		rcfg.SystemPrompt = cfg.SystemPrompt
	}
	deps := actors.Deps{
		Log: log, Persist: persistence{st}, Model: m, Tools: reg,
		Adapters: adapters, Guard: d.guard,
		PromptContext: d.promptContext,
		Jobs:          jobClaimer{st: st, loc: time.Local, log: log},
		Usage:         persistence{st},
		Media:         d.media.Store(),
	}
	if router != nil {
		deps.Models = router
		// A model's own context size, when the catalog gives one, is the
		// budget compression keeps its history within.
		deps.ContextTokens = func(name string) int {
			if name == "" {
				name = router.Default()
			}
			info, _ := router.Info(name)
			return info.ContextTokens
		}
	}
	if err := d.speech(&deps); err != nil {
		return fail(err)
	}
	if err := d.joinCluster(&deps, &rcfg); err != nil {
		return fail(err)
	}
	d.observe(&deps)
	rt, err := actors.Start(rcfg, deps)
	if err != nil {
		return fail(fmt.Errorf("start runtime: %w", err))
	}
	d.rt = rt
	if err := d.startMCP(reg); err != nil {
		_ = rt.Shutdown(context.Background(), 0)
		return fail(err)
	}
	select { // the runtime starts adapters on goroutines; serve only once the web chat accepts
	case <-d.web.Ready():
	case <-time.After(10 * time.Second):
		_ = rt.Shutdown(context.Background(), 0)
		return fail(errors.New("web chat did not start"))
	case <-ctx.Done():
		_ = rt.Shutdown(context.Background(), 0)
		return fail(ctx.Err())
	}
	select { // and once the OpenAI-compatible endpoint does
	case <-d.api.Ready():
	case <-time.After(10 * time.Second):
		_ = rt.Shutdown(context.Background(), 0)
		return fail(errors.New("the OpenAI-compatible API did not start"))
	case <-ctx.Done():
		_ = rt.Shutdown(context.Background(), 0)
		return fail(ctx.Err())
	}

	replyTimeout := o.ReplyTimeout
	if replyTimeout <= 0 {
		replyTimeout = 2 * time.Minute
	}
	d.mux = http.NewServeMux()
	d.web.Routes(d.mux, replyTimeout)
	d.api.Routes(d.mux, replyTimeout)
	d.routes()
	if d.placement != nil {
		d.mux.HandleFunc("GET /api/cluster", d.handleCluster)
		if m := d.Metrics(); m != nil {
			m.ClusterMembers(len(d.placement.Members()))
			d.closers = append(d.closers, d.placement.WatchMembers(m.ClusterMembers))
		}
		d.closers = append(d.closers, d.watchPauses())
	}
	return d, nil
}

// Handler returns the HTTP handler of the admin listener: the routes behind
// the browser boundary (boundary.go), with authentication applied when a
// token is configured.
func (d *Daemon) Handler() http.Handler { return d.boundary(http.HandlerFunc(d.routeErrors)) }

// Runtime returns the actor runtime.
func (d *Daemon) Runtime() *actors.Runtime { return d.rt }

// Store returns the store.
func (d *Daemon) Store() *store.Store { return d.store }

// Serve serves the HTTP listener on ln until ctx ends, then shuts
// everything down: stop accepting, let turns finish within the grace
// period, flush the store.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	d.srv = d.server()
	ln = netutil.LimitListener(ln, d.limits.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- d.srv.Serve(ln) }()
	d.log.Info("hermesd listening", "addr", ln.Addr().String(), "web_chat", "http://"+ln.Addr().String()+"/")
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			d.Close(context.Background())
			return fmt.Errorf("http listener: %w", err)
		}
	case <-ctx.Done():
	case err := <-d.fatal:
		// Cluster mode: this member cannot stay (daemon/cluster.go).
		d.log.Error("leaving: "+err.Error(), "err", err)
		sctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownGrace+10*time.Second)
		defer cancel()
		return errors.Join(err, d.Close(sctx))
	}
	d.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownGrace+10*time.Second)
	defer cancel()
	return d.Close(sctx)
}

// Close stops the runtime (letting turns finish for the grace period), the
// HTTP server and the store.
func (d *Daemon) Close(ctx context.Context) error {
	var errs []error
	if d.rt != nil {
		errs = append(errs, d.rt.Shutdown(ctx, d.cfg.ShutdownGrace))
	}
	if d.srv != nil {
		errs = append(errs, d.srv.Shutdown(ctx))
	}
	d.closeAll()
	errs = append(errs, d.store.Close())
	return errors.Join(errs...)
}

func (d *Daemon) closeAll() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}
