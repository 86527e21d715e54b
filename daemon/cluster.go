package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/cluster"
	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/inspect"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/store"
)

// joinCluster sets the runtime up as a cluster member when HERMES_CLUSTER
// is on: sessions become grains placed by package cluster, fenced by leases
// in the shared store. It refuses a store the members cannot share.
func (d *Daemon) joinCluster(deps *actors.Deps, rcfg *actors.Config) error {
	c := d.cfg.Cluster
	if !c.On {
		return nil
	}
	if d.cfg.DatabaseURL == "" {
		return errors.New("HERMES_CLUSTER=on needs a store the members share: set HERMES_DATABASE_URL to a PostgreSQL database")
	}
	ccfg := cluster.Config{Name: c.Name, Bind: c.Bind, Advertise: c.Advertise, HealthPort: c.HealthPort,
		Members: c.Members, RequestTimeout: c.RequestTimeout}
	if c.Provider == config.ProviderEtcd {
		ccfg.Etcd = cluster.Etcd{Endpoints: c.EtcdEndpoints, Prefix: c.EtcdPrefix}
	}
	pl, err := cluster.New(ccfg, d.log.With("component", "cluster"))
	if err != nil {
		return fmt.Errorf("join the cluster: %w", err)
	}
	deps.Placement = pl
	deps.Leases = leases{d.store}
	rcfg.LeaseTTL, rcfg.MemberID = c.LeaseTTL, c.MemberID()
	// Twice the lease: a message stored by a member cut off from its
	// session is answered within about that, once the owner is idle.
	rcfg.OwedSweep = 2 * c.LeaseTTL
	d.placement = pl
	return nil
}

// leases are the sessions' leases in the store, as the runtime sees them.
type leases struct{ st *store.Store }

var _ actors.Leases = leases{}

func (l leases) Claim(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	epoch, err := l.st.ClaimLease(ctx, key, owner, ttl)
	if errors.Is(err, store.ErrLeaseHeld) {
		return 0, fmt.Errorf("%w: %w", actors.ErrLeaseHeld, err)
	}
	return epoch, err
}

func (l leases) Renew(ctx context.Context, key string, f actors.Fence, ttl time.Duration) error {
	return fencedErr(l.st.RenewLease(ctx, key, store.Fence(f), ttl))
}

func (l leases) Release(ctx context.Context, key string, f actors.Fence) error {
	return fencedErr(l.st.ReleaseLease(ctx, key, store.Fence(f)))
}

// fencedErr makes a store's ErrFenced recognisable as actors.ErrFenced.
func fencedErr(err error) error {
	if errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("%w: %w", actors.ErrFenced, err)
	}
	return err
}

// ClusterStatus is what GET /api/cluster shows: this member, the members
// it sees, and the sessions it holds with their lease epochs.
type ClusterStatus struct {
	Member   string               `json:"member"`
	Address  string               `json:"address"`
	Members  []string             `json:"members"`
	Sessions []actors.SessionInfo `json:"sessions"`
}

// handleCluster serves GET /api/cluster.
func (d *Daemon) handleCluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	l, err := d.rt.Sessions(ctx, r.URL.Query().Get("search"), 0, 100000)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	st := ClusterStatus{Member: d.cfg.Cluster.MemberID(), Address: d.placement.Address(), Members: d.placement.Members(), Sessions: l.Sessions}
	if st.Sessions == nil {
		st.Sessions = []actors.SessionInfo{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// LeaseClaimed passes the cluster's lease events on to the metrics.
func (t toolMetrics) LeaseClaimed(s messages.Session, epoch uint64) {
	if lo, ok := t.Observer.(actors.LeaseObserver); ok {
		lo.LeaseClaimed(s, epoch)
	}
}

// LeaseLost passes the cluster's lease events on to the metrics.
func (t toolMetrics) LeaseLost(s messages.Session, why string) {
	if lo, ok := t.Observer.(actors.LeaseObserver); ok {
		lo.LeaseLost(s, why)
	}
}

var _ actors.LeaseObserver = toolMetrics{}

// clusterInspect is this member for /api/status and /status.
func (d *Daemon) clusterInspect() *inspect.ClusterStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held := 0
	if l, err := d.rt.Sessions(ctx, "", 0, 1); err == nil {
		held = l.Total
	}
	return &inspect.ClusterStatus{Member: d.cfg.Cluster.MemberID(), Members: d.placement.Members(), SessionsHeld: held}
}

// watchPauses stops a cluster member that was paused (SIGSTOP, a frozen VM,
// a machine suspended) for longer than a lease: its sessions' leases lapsed
// and other members may own them now, and the pinned cluster library blocks
// a member it declared dead, so the process would stay a member the others
// never answer, still claiming the sessions its own stale view gives it.
// It leaves instead (Serve returns an error): a supervisor restarts it as
// a fresh member. It leaves the same way when the placement reports the
// cluster dropped it for good (cluster.Placement.Lost: with the etcd
// provider, its etcd lease lapsed).
func (d *Daemon) watchPauses() (stop func()) {
	d.fatal = make(chan error, 1)
	limit := d.cfg.Cluster.LeaseTTL
	done := make(chan struct{})
	go func() {
		const tick = 250 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case err := <-d.placement.Lost():
				// The others dropped this member for good (cluster/etcd.go).
				d.fatal <- err
				return
			case now := <-t.C:
				// Monotonic time: a pause shows as a long gap between ticks.
				if gap := now.Sub(last); gap > limit {
					d.fatal <- fmt.Errorf("this process was paused for %s, longer than the cluster lease (%s): its sessions may have moved; restart it as a fresh member", gap.Round(time.Millisecond), limit)
					return
				}
				last = now
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
