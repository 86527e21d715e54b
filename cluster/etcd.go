package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
)

// Etcd are the settings of the etcd provider: the members register under
// Prefix in the etcd cluster at Endpoints, each with its own etcd lease,
// and watch each other's keys.
type Etcd struct {
	// Endpoints are the etcd servers, host:port or http://host:port.
	Endpoints []string
	// Prefix is the key path the members register under ("/hermesd" if
	// empty); the cluster's name is appended, so clusters with other
	// names sharing the etcd never see each other.
	Prefix string
	// DialTimeout bounds reaching etcd at start (5 s if zero).
	DialTimeout time.Duration
}

// etcdMemberTTL is the etcd provider's member lease, fixed in the pinned
// library (Provider.keepAliveTTL, with no option to change it): a member
// that dies leaves the others' view about this long after its last
// keep-alive.
const etcdMemberTTL = 3 * time.Second

// etcdProvider is protoactor's etcd provider with the workarounds hermesd
// needs around the pinned version (read in its source,
// cluster/clusterproviders/etcd):
//
//   - Its client is built without grpc.WithBlock and every call it makes
//     uses context.TODO with etcd's wait-for-ready: with etcd unreachable,
//     StartMember (and so protoactor's Cluster.StartMember) would block
//     forever. newEtcdProvider dials with WithBlock and a timeout, and
//     StartMember and Shutdown here give up after a bound.
//   - Cluster.StartMember panics on a provider error; Placement.Start
//     recovers it into an error.
//   - Its watch prefix is <base>/<name> with no trailing separator, so
//     with one base a cluster "hermesd" would see the members of
//     "hermesd2": the base key here is <prefix>/<name>, so the name sits
//     between separators and no other name matches.
//   - When this member's own etcd lease lapses (a pause or a cut to etcd
//     longer than etcdMemberTTL) the provider drops this member from its
//     own topology and never adds it back (it skips its own key when it
//     registers again), and protoactor blocks the member that left:
//     Placement reports that through Lost, and the daemon leaves so that a
//     supervisor restarts it as a fresh member.
//   - It lists the members once, then watches from "now", not from the
//     revision it listed: a member that registers in between is never
//     seen (three members started together: one of them saw two members
//     for good). etcdReconciler lists the members every second and, for a
//     registered member this one does not see, writes its key again
//     unchanged so that the watch reports it.
//   - Shutdown deletes this member's key (the others drop it at once) but
//     neither revokes its lease nor closes its client: the client lives
//     until the process exits, as hermesd's does right after.
type etcdProvider struct {
	*etcd.Provider
	endpoints []string
	bound     time.Duration
	// cfg and membersKey are for etcdReconciler's own client: the
	// provider's is not reachable.
	cfg        clientv3.Config
	membersKey string
}

// newEtcdProvider connects to etcd (within cfg.DialTimeout) and returns the
// provider for cluster name.
func newEtcdProvider(cfg Etcd, name string, log *slog.Logger) (*etcdProvider, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("the etcd provider needs at least one endpoint")
	}
	if strings.Contains(name, "/") {
		return nil, fmt.Errorf("cluster name %q: the etcd provider takes a member's id from the last element of its key, so the name must not contain /", name)
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if prefix == "" {
		prefix = "/hermesd"
	}
	dial := cfg.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	ccfg := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: dial,
		// Fail here, with the endpoints named, rather than block in
		// StartMember on an etcd that is not there.
		DialOptions: []grpc.DialOption{grpc.WithBlock()},
		// Keep-alive probes notice a dead connection to etcd long before
		// the member's lease (etcdMemberTTL) runs out.
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.New(slogCore{log: log.With("component", "etcd-client")}),
	}
	// The provider keeps its members under <base>/<name>/.
	base := prefix + "/" + name
	p, err := etcd.NewWithConfig(base, ccfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd at %s within %s: %w", strings.Join(cfg.Endpoints, ","), dial, err)
	}
	return &etcdProvider{Provider: p, endpoints: cfg.Endpoints, bound: 2 * dial, cfg: ccfg, membersKey: base + "/" + name + "/"}, nil
}

// etcdReconciler makes up for the provider's missed registrations (see
// etcdProvider): every second it lists the members registered in etcd
// and writes again, unchanged and under the same etcd lease, the key of
// each one this member does not see, unless the library blocked it (it
// left before). The write is conditional on the key being unchanged since
// the listing, so a member that left in between is not brought back.
type etcdReconciler struct {
	cli    *clientv3.Client
	prefix string
	self   string
	// sees reports whether this member's view holds a member address;
	// blocked whether the library blocked a member id.
	sees, blocked func(string) bool
	log           *slog.Logger
	nudged        map[string]int
}

func newEtcdReconciler(e *etcdProvider, self string, sees, blocked func(string) bool, log *slog.Logger) (*etcdReconciler, error) {
	cli, err := clientv3.New(e.cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd at %s: %w", strings.Join(e.endpoints, ","), err)
	}
	return &etcdReconciler{cli: cli, prefix: e.membersKey, self: self, sees: sees, blocked: blocked, log: log, nudged: map[string]int{}}, nil
}

// run reconciles every interval until ctx ends, then closes the client.
func (r *etcdReconciler) run(ctx context.Context, interval time.Duration) {
	defer r.cli.Close()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, interval)
			if err := r.once(rctx); err != nil && ctx.Err() == nil {
				r.log.Debug("etcd members check failed", "err", err)
			}
			cancel()
		}
	}
}

// etcdMember is the part of the provider's member record (its Node) that
// the reconciler reads.
type etcdMember struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// once lists the members and writes again the keys of those missing here.
func (r *etcdReconciler) once(ctx context.Context) error {
	res, err := r.cli.Get(ctx, r.prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range res.Kvs {
		var m etcdMember
		if err := json.Unmarshal(kv.Value, &m); err != nil || m.Host == "" {
			continue
		}
		addr := net.JoinHostPort(m.Host, strconv.Itoa(m.Port))
		key := string(kv.Key)
		if addr == r.self || r.sees(addr) || r.blocked(m.ID) {
			continue
		}
		// A few tries per member: if writing its key again does not make
		// it appear, something else is wrong; say so once.
		if r.nudged[key]++; r.nudged[key] > 3 {
			if r.nudged[key] == 4 {
				r.log.Warn("a member registered in etcd stays out of this member's view", "member", addr, "key", key)
			}
			continue
		}
		txn, err := r.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(kv.Value), clientv3.WithLease(clientv3.LeaseID(kv.Lease)))).
			Commit()
		if err != nil {
			return fmt.Errorf("rewrite %s: %w", key, err)
		}
		if txn.Succeeded {
			r.log.Info("a member registered in etcd was missing from this member's view: its key written again", "member", addr)
		}
	}
	return nil
}

// StartMember registers this member and starts watching the others, giving
// up when etcd does not answer within the bound.
func (e *etcdProvider) StartMember(c *protocluster.Cluster) error {
	return e.within("join the cluster through etcd", func() error { return e.Provider.StartMember(c) })
}

// StartClient is StartMember's counterpart for a member with no kinds.
func (e *etcdProvider) StartClient(c *protocluster.Cluster) error {
	return e.within("watch the cluster through etcd", func() error { return e.Provider.StartClient(c) })
}

// Shutdown deregisters this member, giving up when etcd does not answer
// within the bound (the others then drop it when its lease lapses).
func (e *etcdProvider) Shutdown(graceful bool) error {
	return e.within("leave the cluster through etcd", func() error { return e.Provider.Shutdown(graceful) })
}

// within runs f, returning its error, or an error once the bound passed
// (f then goes on in the background: the provider's calls take no
// context).
func (e *etcdProvider) within(what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(e.bound)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s (etcd at %s): %w", what, strings.Join(e.endpoints, ","), err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("%s: etcd at %s did not answer within %s", what, strings.Join(e.endpoints, ","), e.bound)
	}
}

// slogCore writes the etcd client's zap log lines to hermesd's slog
// logger, at warnings and above (its info lines are per-connection chatter).
type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func (s slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (s slogCore) With(fs []zapcore.Field) zapcore.Core {
	return slogCore{log: s.log, fields: append(append([]zapcore.Field(nil), s.fields...), fs...)}
}

func (s slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if s.Enabled(e.Level) {
		return ce.AddCore(e, s)
	}
	return ce
}

func (s slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), s.fields...), fs...) {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	s.log.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (s slogCore) Sync() error { return nil }
