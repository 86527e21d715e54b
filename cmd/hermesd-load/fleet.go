package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// member is one hermesd of a run: the only one, or a cluster member.
type member struct {
	n        int
	proc     *botProc
	httpAddr string // HERMES_HTTP_ADDR: /readyz, /api/cluster ("" for the echo bot)
	hookAddr string // TELEGRAM_WEBHOOK_LISTEN ("" when polling)
	killed   atomic.Bool
	cpu0     time.Duration // CPU time when the load began
	loadCPU  time.Duration // CPU time during the load
}

// fleet is the bots of one run and, with webhooks, the balancer in front of
// them.
type fleet struct {
	members []*member
	lb      *balancer
	lbSrv   *httptest.Server
}

// webhookSecret is what the members register and the fake sends back.
const webhookSecret = "hermesd-load-secret"

// startFleet starts o.members bots (hermesd members in a cluster when more
// than one) configured by spec, over the database at dbURL ("" for SQLite).
// With webhooks, the fake pushes to a round-robin balancer in this process
// that forwards to every member's webhook listener.
func startFleet(ctx context.Context, o options, spec botSpec, dbURL string, stderr io.Writer) (*fleet, error) {
	f := &fleet{}
	hermesd := spec.target == "hermesd"
	if hermesd && o.ingress == "webhook" {
		f.lb = newBalancer()
		f.lbSrv = httptest.NewServer(f.lb)
	}
	type addrs struct{ http, hook, bind, health string }
	all := make([]addrs, o.members)
	var healths []string
	for i := range all {
		if !hermesd {
			continue
		}
		var err error
		a := &all[i]
		for _, p := range []*string{&a.http, &a.hook, &a.bind, &a.health} {
			if *p, err = freeAddr(); err != nil {
				f.close()
				return nil, err
			}
		}
		healths = append(healths, a.health)
	}
	for i, a := range all {
		s := spec
		s.env = map[string]string{}
		m := &member{n: i}
		if hermesd {
			m.httpAddr = a.http
			s.env["HERMES_HTTP_ADDR"] = a.http
			if dbURL != "" {
				s.env["HERMES_DATABASE_URL"] = dbURL
			}
			if f.lb != nil {
				m.hookAddr = a.hook
				s.env["TELEGRAM_WEBHOOK_URL"] = f.lbSrv.URL + "/hook"
				s.env["TELEGRAM_WEBHOOK_SECRET"] = webhookSecret
				s.env["TELEGRAM_WEBHOOK_LISTEN"] = a.hook
			}
			if o.members > 1 {
				_, hp, _ := net.SplitHostPort(a.health)
				s.env["HERMES_CLUSTER"] = "on"
				s.env["HERMES_CLUSTER_NAME"] = "hermesd-load"
				s.env["HERMES_CLUSTER_BIND"] = a.bind
				s.env["HERMES_CLUSTER_HEALTH_PORT"] = hp
				s.env["HERMES_CLUSTER_MEMBERS"] = strings.Join(healths, ",")
				if o.leaseTTL > 0 {
					s.env["HERMES_CLUSTER_LEASE_TTL"] = o.leaseTTL.String()
				}
				if o.requestTimeout > 0 {
					s.env["HERMES_CLUSTER_REQUEST_TIMEOUT"] = o.requestTimeout.String()
				}
			}
		}
		if o.cpuProfile != "" && o.members > 1 {
			s.cpuProfile = o.cpuProfile + ".member" + strconv.Itoa(i)
		}
		p, err := startBot(ctx, o, s, stderr)
		if err != nil {
			f.stop()
			f.close()
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		m.proc = p
		f.members = append(f.members, m)
	}
	return f, nil
}

// watch calls stopped once a member that was not killed exits, until ctx
// ends.
func (f *fleet) watch(ctx context.Context, stopped func()) {
	for _, m := range f.members {
		go func() {
			select {
			case <-m.proc.exited:
				if !m.killed.Load() {
					stopped()
				}
			case <-ctx.Done():
			}
		}()
	}
}

// stoppedEarly says whether a member that was not killed has stopped.
func (f *fleet) stoppedEarly() bool {
	for _, m := range f.members {
		select {
		case <-m.proc.exited:
			if !m.killed.Load() {
				return true
			}
		default:
		}
	}
	return false
}

// waitReady waits until every member answers /readyz with 200 (store
// writable, platform connected: with webhooks, registered) and, in a
// cluster, sees every member in GET /api/cluster.
func (f *fleet) waitReady(ctx context.Context) error {
	for _, m := range f.members {
		var last error
		if err := poll(ctx, m, func() bool {
			_, last = httpGet(ctx, "http://"+m.httpAddr+"/readyz")
			return last == nil
		}); err != nil {
			return fmt.Errorf("member %d not ready: %w (last: %v)", m.n, err, last)
		}
		if f.lb != nil {
			f.lb.add(m.hookAddr)
		}
	}
	if len(f.members) < 2 {
		return nil
	}
	for _, m := range f.members {
		var seen []string
		if err := poll(ctx, m, func() bool {
			st, err := clusterOf(ctx, m)
			seen = st.Members
			return err == nil && len(st.Members) == len(f.members)
		}); err != nil {
			return fmt.Errorf("member %d sees members %v, want %d: %w", m.n, seen, len(f.members), err)
		}
	}
	return nil
}

// poll calls ok every 50 ms until it holds, m exits or ctx ends.
func poll(ctx context.Context, m *member, ok func() bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.proc.exited:
			return errors.New("its process exited")
		case <-t.C:
		}
	}
	return nil
}

// clusterStatus is what GET /api/cluster shows (daemon.ClusterStatus).
type clusterStatus struct {
	Member   string   `json:"member"`
	Members  []string `json:"members"`
	Sessions []struct {
		Key string `json:"key"`
	} `json:"sessions"`
}

func clusterOf(ctx context.Context, m *member) (clusterStatus, error) {
	var st clusterStatus
	body, err := httpGet(ctx, "http://"+m.httpAddr+"/api/cluster")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("GET /api/cluster: %w", err)
	}
	return st, nil
}

// httpGet returns the body of a 200 answer to GET url.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, res.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// killed is what killBusiest did.
type killed struct {
	member   int
	at       time.Time // the process was dead
	sessions []string  // the keys it held
}

// killBusiest takes the member holding the most sessions out of the
// balancer and kills it with SIGKILL.
func (f *fleet) killBusiest(ctx context.Context) (killed, error) {
	var best *member
	var held []string
	for _, m := range f.members {
		if m.killed.Load() {
			continue
		}
		st, err := clusterOf(ctx, m)
		if err != nil {
			return killed{}, fmt.Errorf("ask member %d what it holds: %w", m.n, err)
		}
		if best == nil || len(st.Sessions) > len(held) {
			best, held = m, nil
			for _, s := range st.Sessions {
				held = append(held, s.Key)
			}
		}
	}
	if best == nil {
		return killed{}, errors.New("no member left to kill")
	}
	if f.lb != nil {
		f.lb.remove(best.hookAddr)
	}
	best.killed.Store(true)
	best.proc.kill()
	return killed{member: best.n, at: time.Now(), sessions: held}, nil
}

// loadStarts and loadEnded bracket the load, so that CPU figures leave out
// starting (a cluster forming) and stopping. A killed member's CPU counts
// up to its death.
func (f *fleet) loadStarts() {
	for _, m := range f.members {
		if m.proc.cpu != nil {
			m.cpu0 = m.proc.cpu()
		}
	}
}

func (f *fleet) loadEnded() {
	for _, m := range f.members {
		if m.proc.cpu != nil {
			m.loadCPU = m.proc.cpu() - m.cpu0
		}
	}
}

// stop stops every bot and returns their reports, in member order, with
// the CPU time of the load.
func (f *fleet) stop() ([]botReport, error) {
	reps := make([]botReport, len(f.members))
	errs := make([]error, len(f.members))
	var wg sync.WaitGroup
	for i, m := range f.members {
		wg.Go(func() {
			reps[i], errs[i] = m.proc.stop()
			reps[i].CPU = m.loadCPU
			if errs[i] != nil {
				errs[i] = fmt.Errorf("member %d: %w", m.n, errs[i])
			}
		})
	}
	wg.Wait()
	return reps, errors.Join(errs...)
}

func (f *fleet) close() {
	if f.lbSrv != nil {
		f.lbSrv.Close()
	}
}

// balancer spreads webhook requests round-robin over the members' webhook
// listeners, as a load balancer in front of a cluster does; a member that
// refuses the connection is skipped for that request. With none left it
// answers 502 and the fake Telegram retries, as Telegram does.
type balancer struct {
	client *http.Client
	mu     sync.Mutex
	hooks  []string
	next   int
}

func newBalancer() *balancer {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &balancer{client: &http.Client{Transport: t, Timeout: time.Minute}}
}

func (b *balancer) add(hook string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.hooks, hook) {
		b.hooks = append(b.hooks, hook)
	}
}

func (b *balancer) remove(hook string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hooks = slices.DeleteFunc(b.hooks, func(h string) bool { return h == hook })
}

// order returns the hooks to try for one request: the next in turn first.
func (b *balancer) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.hooks) == 0 {
		return nil
	}
	b.next++
	i := b.next % len(b.hooks)
	return append(slices.Clone(b.hooks[i:]), b.hooks[:i]...)
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, hook := range b.order() {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+hook+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		res, err := b.client.Do(req)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				continue // not listening (any more): the next member
			}
			http.Error(w, err.Error(), http.StatusBadGateway) // died mid-request: the fake retries
			return
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
		res.Body.Close()
		return
	}
	http.Error(w, "no member", http.StatusBadGateway)
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
