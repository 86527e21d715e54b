package etcdtest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hermesd/hermesd/cluster/etcdtest"
)

// A started server stores and returns a key, and Stop ends it and deletes
// its data.
func TestServerStoresAndStops(t *testing.T) {
	srv, err := etcdtest.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if host, _, err := net.SplitHostPort(srv.Endpoint()); err != nil || host != "127.0.0.1" {
		t.Fatalf("endpoint %q, want 127.0.0.1:port", srv.Endpoint())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/etcdtest/k", "v1"); err != nil {
		t.Fatal(err)
	}
	res, err := cli.Get(ctx, "/etcdtest/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kvs) != 1 || string(res.Kvs[0].Value) != "v1" {
		t.Fatalf("get = %v", res.Kvs)
	}
	dir := srv.Dir()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop: %v", dir, err)
	}
	if c, err := net.DialTimeout("tcp", srv.Endpoint(), time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", srv.Endpoint())
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// Without the binary Start says what to install.
func TestStartWithoutEtcd(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := etcdtest.Start(context.Background())
	if !errors.Is(err, etcdtest.ErrNotInstalled) || !strings.Contains(err.Error(), "etcd-server") {
		t.Fatalf("err = %v, want ErrNotInstalled naming the package", err)
	}
}
