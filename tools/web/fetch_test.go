package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermesd/hermesd/tools"
	"github.com/hermesd/hermesd/tools/web"
)

func TestGuard_DecisionTable(t *testing.T) {
	cases := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"10.0.0.1", true},
		{"172.16.5.4", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"fe80::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"100.64.0.1", true},
		{"224.0.0.1", true},
		{"255.255.255.255", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped loopback
		{"::ffff:10.0.0.1", true},
		{"64:ff9b::a00:1", true}, // NAT64 of 10.0.0.1
		{"2002:a00:1::", true},   // 6to4 of 10.0.0.1
		{"::a00:1", true},        // IPv4-compatible 10.0.0.1
		{"93.184.216.34", false},
		{"8.8.8.8", false},
		{"2606:4700:4700::1111", false},
		{"::ffff:8.8.8.8", false},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			err := web.Guard{}.Check(netip.MustParseAddr(c.addr))
			if got := err != nil; got != c.blocked {
				t.Fatalf("Check(%s) = %v, want blocked=%v", c.addr, err, c.blocked)
			}
			if err != nil && !errors.Is(err, web.ErrBlockedAddress) {
				t.Fatalf("error %v does not wrap ErrBlockedAddress", err)
			}
			if err := (web.Guard{AllowPrivate: true}).Check(netip.MustParseAddr(c.addr)); err != nil {
				t.Fatalf("with AllowPrivate, Check(%s) = %v", c.addr, err)
			}
		})
	}
}

// TestGuard_ControlChecksTheDialedAddress covers the dial-time hook that
// runs on the socket's own address, after any resolution.
func TestGuard_ControlChecksTheDialedAddress(t *testing.T) {
	g := web.Guard{}
	for _, a := range []string{"10.1.2.3:80", "[::1]:443", "169.254.169.254:80", "[fe80::1%eth0]:80"} {
		if err := g.Control("tcp", a, nil); !errors.Is(err, web.ErrBlockedAddress) {
			t.Errorf("Control(%s) = %v, want blocked", a, err)
		}
	}
	if err := g.Control("tcp4", "1.1.1.1:443", nil); err != nil {
		t.Errorf("Control(public) = %v", err)
	}
	if err := g.Control("udp", "1.1.1.1:53", nil); err == nil {
		t.Error("Control allowed a non-TCP network")
	}
}

// mapResolver is DNS from a table: no query leaves the machine.
type mapResolver map[string][]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(ips))
	for i, s := range ips {
		out[i] = netip.MustParseAddr(s)
	}
	return out, nil
}

func fetchTool(allow bool, res web.Resolver, mod ...func(*web.FetchOptions)) tools.Tool {
	o := web.FetchOptions{Client: web.ClientOptions{Guard: web.Guard{AllowPrivate: allow}, Resolver: res, Timeout: 5 * time.Second}}
	for _, m := range mod {
		m(&o)
	}
	return web.Fetch(o)
}

func run(t *testing.T, tool tools.Tool, rawURL string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"url": rawURL})
	return tool.Run(context.Background(), nil, args)
}

// portOf returns the port of an httptest server.
func portOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	return u.Port()
}

// TestFetch_NamesResolvingToInternalAddressesAreRefused uses a resolver that
// maps names to loopback, private and link-local addresses. Nothing is
// listening behind the private ones and nothing is dialed: the guard refuses
// before connecting. The loopback one has a live server behind it, which
// must not be reached.
func TestFetch_NamesResolvingToInternalAddressesAreRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "secret")
	}))
	defer srv.Close()
	port := portOf(t, srv)
	res := mapResolver{
		"loop.test":     {"127.0.0.1"},
		"private.test":  {"10.20.30.40"},
		"metadata.test": {"169.254.169.254"},
		"mixed.test":    {"192.168.0.7", "127.0.0.1"},
	}
	tool := fetchTool(false, res)
	for _, host := range []string{"loop.test", "private.test", "metadata.test", "mixed.test"} {
		_, err := run(t, tool, "http://"+host+":"+port+"/")
		if err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("%s: err = %v, want a refusal", host, err)
		}
	}
	for _, raw := range []string{"http://127.0.0.1:" + port + "/", "http://[::1]:" + port + "/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/"} {
		if _, err := run(t, tool, raw); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("%s: err = %v, want a refusal", raw, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times", n)
	}
}

// TestFetch_RedirectIsGuardedEachHop: a page the guard allows redirects to
// a name that resolves to a private address; the redirect is refused at its
// own dial.
func TestFetch_RedirectIsGuardedEachHop(t *testing.T) {
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://inner.test/", http.StatusFound)
	}))
	defer outer.Close()
	o := web.FetchOptions{Client: web.ClientOptions{
		Guard:    web.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: mapResolver{"inner.test": {"10.9.9.9"}},
		Timeout:  5 * time.Second,
	}}
	_, err := run(t, web.Fetch(o), outer.URL+"/start")
	if err == nil || !strings.Contains(err.Error(), "10.9.9.9 is private") {
		t.Fatalf("err = %v, want the redirect refused", err)
	}
}

func TestFetch_LoopbackPageWhenAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><title>Otters</title><script>var x = "SCRIPT";</script></head>
<body><nav>Home | About</nav><article><h1>Otters</h1>
<p>Sea otters hold hands while they sleep so that they do not drift apart. This is a well known fact
about otters that many people find charming, and it has been observed in the wild many times.</p>
<p>They also use rocks as tools to open shellfish, which makes them one of the few tool-using marine
mammals. A single otter may keep a favourite rock for a long time.</p></article></body></html>`)
	}))
	defer srv.Close()
	tool := fetchTool(true, mapResolver{"otters.test": {"127.0.0.1"}})
	out, err := run(t, tool, "http://otters.test:"+portOf(t, srv)+"/page")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Title: Otters", "URL: http://otters.test:", "hold hands", "rocks as tools"} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SCRIPT") || strings.Contains(out, "<p>") {
		t.Errorf("result has markup or script:\n%s", out)
	}
}

func TestFetch_BoundsSizeTimeRedirectsAndType(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("x", 1023) + "\n"
		for i := 0; i < 50<<10; i++ { // 50 MB, stopped early by the client
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2})
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", http.StatusNotFound) })
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "ftp://x/", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tool := fetchTool(true, nil, func(o *web.FetchOptions) {
		o.Client.Timeout = 500 * time.Millisecond
		o.MaxBytes = 64 << 10
		o.MaxChars = 1000
	})

	start := time.Now()
	out, err := run(t, tool, srv.URL+"/huge")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 1500 || !strings.Contains(out, "truncated") || !strings.Contains(out, "only the first 65536 bytes") {
		t.Fatalf("huge page: %d bytes, %q…", len(out), out[:min(200, len(out))])
	}
	if _, err := run(t, tool, srv.URL+"/hang"); err == nil {
		t.Fatal("hanging server: no error")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("bounded requests took %v", d)
	}
	for path, want := range map[string]string{"/loop": "redirects", "/file": "not text", "/gone": "404", "/ftp": "ftp"} {
		if _, err := run(t, tool, srv.URL+path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", path, err, want)
		}
	}
	for _, bad := range []string{"", "file:///etc/passwd", "gopher://x", "http://user:pw@example.com/", "not a url"} {
		if _, err := run(t, tool, bad); !errors.Is(err, tools.ErrBadArguments) {
			t.Errorf("url %q: err = %v, want bad arguments", bad, err)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := web.Truncate("héllo", 10); got != "héllo" {
		t.Fatalf("short: %q", got)
	}
	got := web.Truncate(strings.Repeat("é", 30), 10)
	if !strings.HasPrefix(got, strings.Repeat("é", 10)+"\n") || !strings.Contains(got, fmt.Sprintf("10 of %d", 30)) {
		t.Fatalf("long: %q", got)
	}
}

// FuzzGuardControl: any dial address is either refused or, when it is an
// address the guard allows, a public one; nothing panics.
func FuzzGuardControl(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]:443", "10.0.0.1:0", "[::ffff:10.0.0.1]:80", "[fe80::1%eth0]:80",
		"1.1.1.1:443", "example.com:80", ":80", "[::]:1", "0x7f.1:80", "2130706433:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, address string) {
		err := web.Guard{}.Control("tcp", address, nil)
		if err != nil {
			return
		}
		host, _, serr := net.SplitHostPort(address)
		a, perr := netip.ParseAddr(host)
		if serr != nil || perr != nil {
			t.Fatalf("Control(%q) allowed an address that does not parse", address)
		}
		a = a.Unmap()
		if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() {
			t.Fatalf("Control(%q) allowed %s", address, a)
		}
	})
}
