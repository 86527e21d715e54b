package cluster

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hermesd/hermesd/cluster/etcdtest"
)

// The reconciler makes the provider's watch report a registered member
// that this member does not see (the provider missed its registration),
// by writing its key again unchanged, under its lease; it leaves alone
// itself, members it sees, members the library blocked, and a member
// that keeps staying out after a few tries.
func TestEtcdReconcilerRewritesAMissedMember(t *testing.T) {
	et := etcdtest.New(t)
	cfg := clientv3.Config{Endpoints: []string{et.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const prefix = "/hermesd/it/it/"
	lease, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]string{ // key → the provider's record
		prefix + "it@self":    `{"id":"it@self","host":"127.0.0.1","port":7001,"alive":true}`,
		prefix + "it@seen":    `{"id":"it@seen","host":"127.0.0.1","port":7002,"alive":true}`,
		prefix + "it@missed":  `{"id":"it@missed","host":"127.0.0.1","port":7003,"alive":true}`,
		prefix + "it@blocked": `{"id":"it@blocked","host":"127.0.0.1","port":7004,"alive":true}`,
	}
	for k, v := range members {
		if _, err := cli.Put(ctx, k, v, clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watch := cli.Watch(wctx, prefix, clientv3.WithPrefix())
	r := &etcdReconciler{cli: cli, prefix: prefix, self: "127.0.0.1:7001",
		sees:    func(addr string) bool { return addr == "127.0.0.1:7002" },
		blocked: func(id string) bool { return id == "it@blocked" },
		log:     slog.New(slog.DiscardHandler), nudged: map[string]int{}}
	if err := r.once(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-watch:
		if len(res.Events) != 1 {
			t.Fatalf("events %v, want one", res.Events)
		}
		ev := res.Events[0]
		if ev.Type != clientv3.EventTypePut || string(ev.Kv.Key) != prefix+"it@missed" ||
			string(ev.Kv.Value) != members[prefix+"it@missed"] || clientv3.LeaseID(ev.Kv.Lease) != lease.ID {
			t.Fatalf("event %v %s = %s (lease %x), want the missed member's key rewritten unchanged under lease %x",
				ev.Type, ev.Kv.Key, ev.Kv.Value, ev.Kv.Lease, lease.ID)
		}
	case <-ctx.Done():
		t.Fatal("no watch event after the reconciler ran")
	}
	// It keeps trying a member that stays out, three times in all, then
	// stops writing.
	for range 4 {
		if err := r.once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A sentinel written after them: the watch delivers in revision order,
	// so every rewrite shows before it.
	if _, err := cli.Put(ctx, prefix+"sentinel", "{}"); err != nil {
		t.Fatal(err)
	}
	got := 1
	for done := false; !done; {
		select {
		case res := <-watch:
			for _, ev := range res.Events {
				switch string(ev.Kv.Key) {
				case prefix + "sentinel":
					done = true
				case prefix + "it@missed":
					got++
				default:
					t.Errorf("rewrote %s", ev.Kv.Key)
				}
			}
		case <-ctx.Done():
			t.Fatal("the sentinel never showed")
		}
	}
	if got != 3 {
		t.Errorf("the missed member's key was written %d times, want 3", got)
	}
}
