package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_ClusterOffByDefault(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.On {
		t.Fatal("cluster mode on by default")
	}
}

func TestLoad_ClusterMember(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_CLUSTER": "on", "HERMES_DATABASE_URL": "postgres://u@db:5432/hermes",
		"HERMES_CLUSTER_BIND": "0.0.0.0:9100", "HERMES_CLUSTER_ADVERTISE": "10.0.0.2",
		"HERMES_CLUSTER_MEMBERS": "10.0.0.1:9101,10.0.0.2:9101", "HERMES_CLUSTER_HEALTH_PORT": "9101",
		"HERMES_CLUSTER_LEASE_TTL": "5s"}))
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Cluster
	if !cl.On || len(cl.Members) != 2 || cl.HealthPort != 9101 || cl.LeaseTTL != 5*time.Second || cl.RequestTimeout != 2*time.Second {
		t.Fatalf("cluster = %+v", cl)
	}
	if id := cl.MemberID(); id != "10.0.0.2:9100" {
		t.Errorf("member id %q, want the advertised host with the bound port", id)
	}
}

func TestLoad_ClusterRefusesWhatCannotForm(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HERMES_CLUSTER": "on"}, "HERMES_CLUSTER_MEMBERS"},
		{map[string]string{"HERMES_CLUSTER": "on", "HERMES_CLUSTER_MEMBERS": "a:1", "HERMES_CLUSTER_BIND": "127.0.0.1:0"}, "HERMES_CLUSTER_BIND"},
		{map[string]string{"HERMES_CLUSTER": "on", "HERMES_CLUSTER_MEMBERS": "nohost"}, "HERMES_CLUSTER_MEMBERS"},
		{map[string]string{"HERMES_CLUSTER": "maybe"}, "HERMES_CLUSTER"},
		{map[string]string{"HERMES_CLUSTER_LEASE_TTL": "100ms"}, "HERMES_CLUSTER_LEASE_TTL"},
		{map[string]string{"HERMES_CLUSTER_HEALTH_PORT": "70000"}, "HERMES_CLUSTER_HEALTH_PORT"},
		{map[string]string{"HERMES_CLUSTER": "on", "HERMES_CLUSTER_MEMBERS": "a:1"}, "HERMES_DATABASE_URL"},
	} {
		tc.env["HERMES_HOME"] = t.TempDir()
		_, err := Load(lookup(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one naming %s", tc.env, err, tc.want)
		}
	}
}

// Telegram long polling is allowed in a cluster: the members elect one
// poller (daemon/poller.go).
func TestLoad_ClusterTakesTelegramPolling(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_CLUSTER": "on", "HERMES_CLUSTER_MEMBERS": "a:1",
		"HERMES_DATABASE_URL": "postgres://u@db/h", "TELEGRAM_BOT_TOKEN": "1:x"}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cluster.On || c.TelegramToken == "" || c.TelegramWebhookURL != "" {
		t.Fatalf("config = cluster %v, token %q, webhook %q", c.Cluster.On, c.TelegramToken, c.TelegramWebhookURL)
	}
}

func TestLoad_ClusterProviderDefaultsToAutomanaged(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_CLUSTER": "on", "HERMES_CLUSTER_MEMBERS": "a:1",
		"HERMES_DATABASE_URL": "postgres://u@db/h"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.Provider != ProviderAutomanaged {
		t.Fatalf("provider %q, want automanaged by default", c.Cluster.Provider)
	}
}

// With etcd the members find each other through etcd: no member list is
// needed, the endpoints are.
func TestLoad_ClusterOverEtcd(t *testing.T) {
	env := map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_CLUSTER": "on", "HERMES_DATABASE_URL": "postgres://u@db/h",
		"HERMES_CLUSTER_PROVIDER": " Etcd ", "HERMES_CLUSTER_ETCD_ENDPOINTS": "10.0.0.5:2379, http://etcd-2.internal:2379 ,[::1]:2379"}
	c, err := Load(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Cluster
	want := []string{"10.0.0.5:2379", "http://etcd-2.internal:2379", "[::1]:2379"}
	if cl.Provider != ProviderEtcd || strings.Join(cl.EtcdEndpoints, ",") != strings.Join(want, ",") || cl.EtcdPrefix != "/hermesd" || len(cl.Members) != 0 {
		t.Fatalf("cluster = %+v", cl)
	}
	// The settings are listed (hermesd config) like the others.
	settings, err := Resolve(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, s := range settings {
		shown[s.Name] = s.Value
	}
	if shown["HERMES_CLUSTER_PROVIDER"] != " Etcd " || shown["HERMES_CLUSTER_ETCD_PREFIX"] != "/hermesd" {
		t.Errorf("settings show provider %q, prefix %q", shown["HERMES_CLUSTER_PROVIDER"], shown["HERMES_CLUSTER_ETCD_PREFIX"])
	}
}

func TestLoad_ClusterProviderRefusals(t *testing.T) {
	on := func(kv ...string) map[string]string {
		m := map[string]string{"HERMES_CLUSTER": "on", "HERMES_DATABASE_URL": "postgres://u@db/h"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		env  map[string]string
		want []string // all in the error
	}{
		{on("HERMES_CLUSTER_PROVIDER", "swarm", "HERMES_CLUSTER_MEMBERS", "a:1"), []string{"HERMES_CLUSTER_PROVIDER", "automanaged or etcd", `"swarm"`}},
		{on("HERMES_CLUSTER_PROVIDER", "consul"), []string{"HERMES_CLUSTER_PROVIDER", `"consul" is not built into this binary`}},
		{on("HERMES_CLUSTER_PROVIDER", "k8s"), []string{"HERMES_CLUSTER_PROVIDER", `"k8s" is not built into this binary`, "client-go"}},
		// Checked with the cluster off too, so a typo shows before the day it is turned on.
		{map[string]string{"HERMES_CLUSTER_PROVIDER": "kubernetes"}, []string{"HERMES_CLUSTER_PROVIDER", "not built into this binary"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd"), []string{"HERMES_CLUSTER_ETCD_ENDPOINTS", "required"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "etcd-1"), []string{"HERMES_CLUSTER_ETCD_ENDPOINTS", `"etcd-1"`}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "etcd-1:99999"), []string{"HERMES_CLUSTER_ETCD_ENDPOINTS", "port"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "https://etcd-1:2379"), []string{"HERMES_CLUSTER_ETCD_ENDPOINTS", "TLS"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "http://etcd-1:2379/v3"), []string{"HERMES_CLUSTER_ETCD_ENDPOINTS"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "a:2379", "HERMES_CLUSTER_ETCD_PREFIX", "hermesd/"), []string{"HERMES_CLUSTER_ETCD_PREFIX"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "a:2379", "HERMES_CLUSTER_NAME", "prod/eu"), []string{"HERMES_CLUSTER_NAME", "/"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "a:2379", "HERMES_CLUSTER_BIND", "0.0.0.0:7610"), []string{"HERMES_CLUSTER_ADVERTISE", "0.0.0.0:7610"}},
		{on("HERMES_CLUSTER_PROVIDER", "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS", "a:2379", "HERMES_CLUSTER_BIND", ":7610"), []string{"HERMES_CLUSTER_ADVERTISE"}},
		{on("HERMES_CLUSTER_MEMBERS", "a:1", "HERMES_CLUSTER_BIND", "0.0.0.0:7610"), []string{"HERMES_CLUSTER_ADVERTISE", "0.0.0.0:7610"}},
		// automanaged still needs its member list.
		{on("HERMES_CLUSTER_PROVIDER", "automanaged", "HERMES_CLUSTER_ETCD_ENDPOINTS", "a:2379"), []string{"HERMES_CLUSTER_MEMBERS"}},
	} {
		tc.env["HERMES_HOME"] = t.TempDir()
		_, err := Load(lookup(tc.env))
		if err == nil {
			t.Errorf("%v: loaded, want an error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err = %v, want it to say %s", tc.env, err, w)
			}
		}
	}
}

// Listening on all interfaces is fine with the etcd provider once the
// address the others dial is given.
func TestLoad_ClusterOverEtcdBindsAllInterfacesWithAdvertise(t *testing.T) {
	c, err := Load(lookup(map[string]string{"HERMES_HOME": t.TempDir(), "HERMES_CLUSTER": "on", "HERMES_DATABASE_URL": "postgres://u@db/h",
		"HERMES_CLUSTER_PROVIDER": "etcd", "HERMES_CLUSTER_ETCD_ENDPOINTS": "etcd:2379",
		"HERMES_CLUSTER_BIND": "0.0.0.0:7610", "HERMES_CLUSTER_ADVERTISE": "10.0.0.3"}))
	if err != nil {
		t.Fatal(err)
	}
	if id := c.Cluster.MemberID(); id != "10.0.0.3:7610" {
		t.Errorf("member id %q", id)
	}
}
