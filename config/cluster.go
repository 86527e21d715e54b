package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Cluster are the settings of cluster mode: several hermesd members that
// share one PostgreSQL store, each session living on one member at a time
// (package cluster; docs/operations.md, "Cluster mode").
type Cluster struct {
	// On turns cluster mode on; off (the default) is the single process.
	On bool
	// Name is the cluster's name: members with another name never join.
	Name string
	// Bind is this member's host:port for the other members (protoactor
	// remote, gRPC); Advertise, if set, is the host the others dial.
	Bind, Advertise string
	// HealthPort is this member's membership port (the automanaged
	// provider's GET /_health); Members lists every member's
	// host:HealthPort, this one included.
	HealthPort int
	Members    []string
	// RequestTimeout bounds one attempt to reach a session on a member;
	// LeaseTTL is how long a session's lease lasts unrenewed.
	RequestTimeout, LeaseTTL time.Duration
	// Provider is how the members find each other: ProviderAutomanaged
	// (the default: Members and HealthPort, no external service) or
	// ProviderEtcd (an etcd cluster at EtcdEndpoints).
	Provider string
	// EtcdEndpoints are the etcd servers' host:port (or http:// URLs);
	// EtcdPrefix is the key prefix under which the members register.
	EtcdEndpoints []string
	EtcdPrefix    string
}

// The cluster providers built into hermesd (HERMES_CLUSTER_PROVIDER).
const (
	ProviderAutomanaged = "automanaged"
	ProviderEtcd        = "etcd"
)

// MemberID names this member in lease owners and /status: its advertised
// (or bound) address.
func (c Cluster) MemberID() string {
	host, port, err := net.SplitHostPort(c.Bind)
	if err != nil {
		return c.Bind
	}
	if c.Advertise != "" {
		host = c.Advertise
	}
	return net.JoinHostPort(host, port)
}

// clusterKeys are the settings of Cluster, as in keys.
var clusterKeys = []struct {
	name, def string
	secret    bool
}{
	{"HERMES_CLUSTER", "off", false},
	{"HERMES_CLUSTER_NAME", "hermesd", false},
	{"HERMES_CLUSTER_BIND", "127.0.0.1:7610", false},
	{"HERMES_CLUSTER_ADVERTISE", "", false},
	{"HERMES_CLUSTER_HEALTH_PORT", "7611", false},
	{"HERMES_CLUSTER_MEMBERS", "", false},
	{"HERMES_CLUSTER_REQUEST_TIMEOUT", "2s", false},
	{"HERMES_CLUSTER_LEASE_TTL", "10s", false},
	{"HERMES_CLUSTER_PROVIDER", ProviderAutomanaged, false},
	{"HERMES_CLUSTER_ETCD_ENDPOINTS", "", false},
	{"HERMES_CLUSTER_ETCD_PREFIX", "/hermesd", false},
}

// parseCluster reads Cluster from v, reporting bad values through bad.
func parseCluster(v map[string]string, bad func(key, format string, args ...any)) Cluster {
	var c Cluster
	switch strings.ToLower(strings.TrimSpace(v["HERMES_CLUSTER"])) {
	case "on", "true", "yes", "1":
		c.On = true
	case "off", "false", "no", "0", "":
	default:
		bad("HERMES_CLUSTER", "want on or off, got %q", v["HERMES_CLUSTER"])
	}
	c.Name = strings.TrimSpace(v["HERMES_CLUSTER_NAME"])
	c.Bind = strings.TrimSpace(v["HERMES_CLUSTER_BIND"])
	c.Advertise = strings.TrimSpace(v["HERMES_CLUSTER_ADVERTISE"])
	c.Members = list(v["HERMES_CLUSTER_MEMBERS"])
	dur := func(key string) time.Duration {
		d, err := time.ParseDuration(v[key])
		if err != nil || d <= 0 {
			bad(key, "want a positive duration such as 2s, got %q", v[key])
		}
		return d
	}
	c.RequestTimeout = dur("HERMES_CLUSTER_REQUEST_TIMEOUT")
	c.LeaseTTL = dur("HERMES_CLUSTER_LEASE_TTL")
	if c.LeaseTTL > 0 && c.LeaseTTL < time.Second {
		bad("HERMES_CLUSTER_LEASE_TTL", "want at least 1s (it is renewed every third of it), got %s", c.LeaseTTL)
	}
	port, err := strconv.Atoi(strings.TrimSpace(v["HERMES_CLUSTER_HEALTH_PORT"]))
	if err != nil || port <= 0 || port > 65535 {
		bad("HERMES_CLUSTER_HEALTH_PORT", "want a port number, got %q", v["HERMES_CLUSTER_HEALTH_PORT"])
	}
	c.HealthPort = port
	parseClusterProvider(&c, v, bad)
	if !c.On {
		return c
	}
	if c.Name == "" {
		bad("HERMES_CLUSTER_NAME", "must not be empty")
	}
	if _, p, err := net.SplitHostPort(c.Bind); err != nil {
		bad("HERMES_CLUSTER_BIND", "want host:port, got %q", c.Bind)
	} else if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		// Port 0 would pick a free port the other members cannot know.
		bad("HERMES_CLUSTER_BIND", "want a fixed port, got %q", c.Bind)
	}
	if h, _, err := net.SplitHostPort(c.Bind); err == nil && c.Advertise == "" && (h == "" || net.ParseIP(h) != nil && net.ParseIP(h).IsUnspecified()) {
		// Both providers tell the others the address to dial as this
		// member's remote address, which would be 0.0.0.0 here.
		bad("HERMES_CLUSTER_ADVERTISE", "required when HERMES_CLUSTER_BIND listens on all interfaces (%q): the host the other members dial", c.Bind)
	}
	switch c.Provider {
	case ProviderAutomanaged:
		if len(c.Members) == 0 {
			bad("HERMES_CLUSTER_MEMBERS", "required when HERMES_CLUSTER=on: every member's host:health-port, this one included")
		}
		for _, m := range c.Members {
			if _, p, err := net.SplitHostPort(m); err != nil || p == "" {
				bad("HERMES_CLUSTER_MEMBERS", "want host:port entries, got %q", m)
			}
		}
	case ProviderEtcd:
		if strings.Contains(c.Name, "/") {
			// The provider takes a member's id from the last path element
			// of its key, which holds the name.
			bad("HERMES_CLUSTER_NAME", "must not contain / with the etcd provider, got %q", c.Name)
		}
	}
	return c
}

// parseClusterProvider reads HERMES_CLUSTER_PROVIDER and its settings into
// c; it checks them whether or not cluster mode is on, so a mistake shows
// before the day the cluster is turned on.
func parseClusterProvider(c *Cluster, v map[string]string, bad func(key, format string, args ...any)) {
	c.Provider = strings.ToLower(strings.TrimSpace(v["HERMES_CLUSTER_PROVIDER"]))
	switch c.Provider {
	case ProviderAutomanaged, ProviderEtcd:
	case "consul", "k8s", "kubernetes", "zk", "zookeeper":
		bad("HERMES_CLUSTER_PROVIDER", "%q is not built into this binary, only automanaged and etcd are: its service cannot run in hermesd's tests, and Kubernetes' client-go alone would grow hermesd by half (about 29 MB, 26 more modules); see docs/operations.md, \"Cluster providers\"", c.Provider)
	default:
		bad("HERMES_CLUSTER_PROVIDER", "want automanaged or etcd, got %q", v["HERMES_CLUSTER_PROVIDER"])
	}
	c.EtcdEndpoints = list(v["HERMES_CLUSTER_ETCD_ENDPOINTS"])
	for _, e := range c.EtcdEndpoints {
		if err := checkEtcdEndpoint(e); err != nil {
			bad("HERMES_CLUSTER_ETCD_ENDPOINTS", "%v", err)
		}
	}
	c.EtcdPrefix = strings.TrimSpace(v["HERMES_CLUSTER_ETCD_PREFIX"])
	if c.EtcdPrefix != "" && (!strings.HasPrefix(c.EtcdPrefix, "/") || strings.HasSuffix(c.EtcdPrefix, "/")) {
		bad("HERMES_CLUSTER_ETCD_PREFIX", "want a key path such as /hermesd (leading /, no trailing /), got %q", c.EtcdPrefix)
	}
	if c.On && c.Provider == ProviderEtcd {
		if len(c.EtcdEndpoints) == 0 {
			bad("HERMES_CLUSTER_ETCD_ENDPOINTS", "required with HERMES_CLUSTER_PROVIDER=etcd: the etcd servers' host:port, comma-separated")
		}
		if c.EtcdPrefix == "" {
			bad("HERMES_CLUSTER_ETCD_PREFIX", "must not be empty with HERMES_CLUSTER_PROVIDER=etcd")
		}
	}
}

// checkEtcdEndpoint accepts host:port or an http:// URL with a host and a
// port. https:// is refused: hermesd has no settings for etcd's TLS yet.
func checkEtcdEndpoint(e string) error {
	hostport := e
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("want host:port or http://host:port, got %q", e)
		}
		if u.Scheme != "http" {
			return fmt.Errorf("want host:port or http://host:port, got %q (TLS to etcd is not supported yet)", e)
		}
		if (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			return fmt.Errorf("want host:port or http://host:port, got %q", e)
		}
		hostport = u.Host
	}
	h, p, err := net.SplitHostPort(hostport)
	if err != nil || h == "" {
		return fmt.Errorf("want host:port or http://host:port, got %q", e)
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("want a port number in %q", e)
	}
	return nil
}

// checkCluster refuses what cluster mode cannot run: members that do not
// share a store. (Telegram long polling is allowed: the members elect one
// poller, daemon/poller.go.)
func checkCluster(c Config, bad func(key, format string, args ...any)) {
	if !c.Cluster.On {
		return
	}
	if c.DatabaseURL == "" {
		bad("HERMES_DATABASE_URL", "required when HERMES_CLUSTER=on: the members share one PostgreSQL database")
	}
}
