package cluster_test

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermesd/hermesd/cluster"
	"github.com/hermesd/hermesd/cluster/etcdtest"
)

// An etcd that does not answer (a port that accepts and then hangs, or one
// that refuses) fails New within the dial timeout, naming the endpoint,
// instead of blocking the member's start forever.
func TestEtcdUnreachableFailsNewWithinTheDialTimeout(t *testing.T) {
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	refused := freeAddr(t) // nothing listens there any more
	for _, ep := range []string{hang.Addr().String(), "http://" + refused} {
		start := time.Now()
		_, err := cluster.New(cluster.Config{Name: "faults", Bind: "127.0.0.1:0",
			Etcd: cluster.Etcd{Endpoints: []string{ep}, DialTimeout: 500 * time.Millisecond}}, nil)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), ep) {
			t.Errorf("%s: err = %v, want one naming the endpoint", ep, err)
		}
		if took > 3*time.Second {
			t.Errorf("%s: New took %s with a 500ms dial timeout", ep, took)
		}
	}
}

// A member whose etcd is gone still leaves within a bound: the provider's
// own deregistration would wait for etcd forever.
func TestEtcdGoneAMemberStillStops(t *testing.T) {
	et := etcdtest.New(t)
	pl, err := cluster.New(cluster.Config{Name: "faults", Bind: "127.0.0.1:0",
		Etcd: cluster.Etcd{Endpoints: []string{et.Endpoint()}, DialTimeout: time.Second}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if pl.Provider() != "etcd" {
		t.Fatalf("provider %q", pl.Provider())
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLog() }))
	if err := pl.Start(sys, actor.PropsFromFunc(func(actor.Context) {})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(pl.Members()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("members %v, want this one", pl.Members())
		}
		time.Sleep(20 * time.Millisecond) // polling membership with a deadline
	}
	if m := pl.Members(); m[0] != pl.Address() {
		t.Fatalf("members %v, want %s", m, pl.Address())
	}
	if err := et.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	start := time.Now()
	go func() { pl.Stop(); close(stopped) }()
	select {
	case <-stopped:
		// 2 × the dial timeout for the deregistration, then the library's
		// fixed 2 s wait.
		t.Logf("stopped in %s with etcd gone", time.Since(start).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("Stop still blocked 15s after etcd went away")
	}
}

// Two clusters sharing an etcd, one's name a prefix of the other's, do
// not see each other's members.
func TestEtcdClustersWhoseNamesShareAPrefixStayApart(t *testing.T) {
	et := etcdtest.New(t)
	var pls []*cluster.Placement
	for _, name := range []string{"a", "ab"} {
		pl, err := cluster.New(cluster.Config{Name: name, Bind: "127.0.0.1:0",
			Etcd: cluster.Etcd{Endpoints: []string{et.Endpoint()}, DialTimeout: time.Second}}, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLog() }))
		if err := pl.Start(sys, actor.PropsFromFunc(func(actor.Context) {})); err != nil {
			t.Fatal(err)
		}
		pls = append(pls, pl)
	}
	defer func() {
		var wg sync.WaitGroup
		for _, pl := range pls {
			wg.Go(pl.Stop)
		}
		wg.Wait()
	}()
	// A third member of "ab" joins: both "ab" members see two members
	// (so the watches work), and "a" still sees itself alone.
	pl, err := cluster.New(cluster.Config{Name: "ab", Bind: "127.0.0.1:0",
		Etcd: cluster.Etcd{Endpoints: []string{et.Endpoint()}, DialTimeout: time.Second}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quietLog() }))
	if err := pl.Start(sys, actor.PropsFromFunc(func(actor.Context) {})); err != nil {
		t.Fatal(err)
	}
	pls = append(pls, pl)
	deadline := time.Now().Add(10 * time.Second)
	for len(pls[1].Members()) != 2 || len(pls[2].Members()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("cluster ab: members %v and %v, want two each", pls[1].Members(), pls[2].Members())
		}
		time.Sleep(20 * time.Millisecond) // polling membership with a deadline
	}
	if m := pls[0].Members(); len(m) != 1 || m[0] != pls[0].Address() {
		t.Errorf("cluster a sees %v, want only itself (%s)", m, pls[0].Address())
	}
}
