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
