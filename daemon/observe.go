package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/metrics"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/tools"
)

// recentErrors is how many warnings and errors the status page keeps.
const recentErrors = 100

// observation is what observe builds and inspectionRoutes serves: the
// metrics, the live actor tree and the ring of recent errors.
type observation struct {
	metrics  *metrics.Metrics // nil if it could not be built
	tree     *inspect.Tree
	recent   *inspect.Recent
	adapters []platforms.Adapter
	started  time.Time

	optsMu sync.Mutex
	opts   map[string][]actor.PropsOption // per kind: tree + metrics, built once
}

var _ actors.Observer = (*metrics.Metrics)(nil)

// newObservation makes the tree and the recent-errors ring; New builds it
// first so that every component's log lines reach the status page.
func newObservation() *observation {
	return &observation{
		tree: inspect.NewTree(), recent: inspect.NewRecent(recentErrors, slog.LevelWarn),
		started: time.Now(), opts: make(map[string][]actor.PropsOption),
	}
}

// wrap returns log with its warnings and errors also kept for the status
// page.
func (o *observation) wrap(log *slog.Logger) *slog.Logger {
	return slog.New(o.recent.Wrap(log.Handler()))
}

// observe wires metrics and inspection into deps before the runtime starts:
// every actor's Props are instrumented (deps.Instrument), the metrics
// observe the runtime's events (deps.Observer) and identity refusals (the
// guard's OnRefuse).
func (d *Daemon) observe(deps *actors.Deps) {
	o := d.obs
	o.adapters = deps.Adapters
	deps.Log = d.log
	if d.guard != nil {
		d.guard.Log = d.log
	}

	names := toolNames(deps.Tools)
	servers := d.mcp.names()
	for _, s := range servers {
		names = append(names, "mcp_"+s)
	}
	var models []string
	if d.router != nil {
		for _, info := range d.router.Models() {
			models = append(models, info.Name)
		}
	}
	m, err := metrics.New(metrics.Options{Actors: o.tree.EachKind, Tools: names, Models: models, Store: d.storeCounts})
	if err != nil {
		d.log.Error("metrics are disabled", "err", err)
	} else {
		o.metrics = m
		deps.Observer = toolMetrics{Observer: m, servers: servers}
		if d.guard != nil {
			d.guard.OnRefuse = m.IdentityRefused
		}
		d.closers = append(d.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.Shutdown(ctx); err != nil {
				d.log.Warn("stop metrics", "err", err)
			}
		})
	}
	deps.Instrument = o.instrument
}

// inspectionRoutes registers /metrics, /api/actors, /api/status and
// /status, and starts counting dead letters (the runtime is running now).
func (d *Daemon) inspectionRoutes() {
	o := d.obs
	if o.metrics != nil {
		d.closers = append(d.closers, o.metrics.WatchDeadLetters(d.rt.System()))
		d.mux.Handle("GET /metrics", o.metrics.Handler())
	}
	api := &inspect.API{
		Tree: o.tree, Recent: o.recent, Started: o.started,
		Platforms: o.platforms, RunningTurns: d.rt.RunningTurns, Refusals: d.guard.Refusals,
		MCP: d.mcpInspect,
	}
	if d.placement != nil {
		api.Cluster = d.clusterInspect
	}
	d.mux.HandleFunc("GET /api/actors", api.HandleActors)
	d.mux.HandleFunc("GET /api/status", api.HandleStatus)
	d.mux.HandleFunc("GET /status", api.HandlePage)
	d.mux.HandleFunc("GET /status/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status", http.StatusMovedPermanently)
	})
}

// Metrics returns the daemon's metrics, for hooks outside the actor tree
// (TTS synthesis, platform API errors and 429s); nil if they could not be
// built.
func (d *Daemon) Metrics() *metrics.Metrics {
	if d.obs == nil {
		return nil
	}
	return d.obs.metrics
}

// instrument is deps.Instrument: one Clone of p with the tree's and the
// metrics' options for kind.
func (o *observation) instrument(k actors.Kind, p *actor.Props) *actor.Props {
	kind := string(k)
	o.optsMu.Lock()
	opts, ok := o.opts[kind]
	if !ok {
		opts = o.tree.PropsOptions(kind)
		if o.metrics != nil {
			opts = slices.Concat(opts, o.metrics.PropsOptions(kind))
		}
		o.opts[kind] = opts
	}
	o.optsMu.Unlock()
	return p.Clone(opts...)
}

// platforms reports each running adapter's health; adapters that do not
// track their connection are shown as running.
func (o *observation) platforms() []inspect.PlatformStatus {
	out := make([]inspect.PlatformStatus, 0, len(o.adapters))
	for _, a := range o.adapters {
		ps := inspect.PlatformStatus{Platform: string(a.Capabilities().Platform)}
		if hr, ok := a.(platforms.HealthReporter); ok {
			h := hr.Health()
			ps.ReportsHealth, ps.Connected, ps.LastError = true, h.Connected, clip(h.LastError, 300)
			ps.Standby = h.Standby
		}
		out = append(out, ps)
	}
	return out
}

func toolNames(r *tools.Registry) []string {
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	return names
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// storeCounts reads the store writer's counters for the metrics.
func (d *Daemon) storeCounts() metrics.StoreCounts {
	w := d.store.Stats()
	return metrics.StoreCounts{Transactions: w.Batches, Writes: w.Ops, Failed: w.Failed, Fenced: w.Fenced, Queued: int64(w.Queued)}
}
