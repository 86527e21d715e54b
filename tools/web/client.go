package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Resolver maps a host name to its addresses. *net.Resolver implements it;
// tests pass a map so that no query leaves the machine.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ClientOptions configure a guarded HTTP client.
type ClientOptions struct {
	Guard Guard
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds a whole request, body included.
	Timeout time.Duration
	// MaxRedirects bounds the redirects followed; each hop is guarded again.
	MaxRedirects int
}

// NewClient returns an HTTP client whose every connection, redirects
// included, is checked by the guard on the resolved address at dial time.
// It ignores proxy variables: a proxy would make the dialed address the
// proxy's, and the guard would check the wrong thing.
func NewClient(o ClientOptions) *http.Client {
	res := o.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: o.Guard.Control}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			return dialGuarded(ctx, dialer, res, o.Guard, network, address)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
	}
	maxRedirects := o.MaxRedirects
	return &http.Client{
		Transport: tr,
		Timeout:   o.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s URL refused", req.URL.Scheme)
			}
			return nil
		},
	}
}

// dialGuarded resolves the host itself (so a test resolver can stand in for
// DNS) and dials the addresses in turn; the dialer's Control refuses a
// blocked one before any packet is sent to it.
func dialGuarded(ctx context.Context, d *net.Dialer, res Resolver, g Guard, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	var addrs []netip.Addr
	if a, perr := netip.ParseAddr(host); perr == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
	}
	var errs []error
	for _, a := range addrs {
		// Checked here too, so a refusal names the host the user asked for;
		// Control checks again on the socket's own address.
		if err := g.Check(a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", host, err))
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
