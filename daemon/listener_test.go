package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/daemon"
	"github.com/hermesd/hermesd/model"
)

// serve runs the daemon through Serve on a real listener, as the binary
// does, and returns its base URL.
func serve(t *testing.T, o daemon.Options) string {
	t.Helper()
	d, err := daemon.New(context.Background(), testConfig(t, t.TempDir(), nil), slog.New(slog.DiscardHandler), o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// openStream opens an event stream and returns a channel of its data lines
// and a function that closes it.
func openStream(t *testing.T, base, chat string) (*http.Response, <-chan string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/chat/"+chat+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	stop := func() { cancel(); res.Body.Close() }
	t.Cleanup(stop)
	return res, lines, stop
}

// TestHTTP_SlowBodyIsCutOff: a client trickling its body a byte at a time
// (issue 11: 3,000 of them stayed open) is disconnected once ReadTimeout
// has passed, however long it keeps trickling.
func TestHTTP_SlowBodyIsCutOff(t *testing.T) {
	base := serve(t, daemon.Options{HTTP: daemon.HTTPLimits{ReadTimeout: 400 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	trickle := time.NewTicker(50 * time.Millisecond)
	defer trickle.Stop()
	stopTrickle := make(chan struct{})
	defer close(stopTrickle)
	go func() {
		for {
			select {
			case <-stopTrickle:
				return
			case <-trickle.C:
				if _, err := io.WriteString(conn, " "); err != nil {
					return
				}
			}
		}
	}()
	// The server answers (or just closes) and then the connection ends.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a body trickled for 5 s was still being read (ReadTimeout 400ms)")
	}
}

// TestHTTP_LongLivedRequestsOutliveReadTimeout: the read timeout bounds
// bodies only; an event stream and a turn longer than it still work.
func TestHTTP_LongLivedRequestsOutliveReadTimeout(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	slow := slowModel{delay: 3 * readTimeout}
	base := serve(t, daemon.Options{Model: slow, HTTP: daemon.HTTPLimits{ReadTimeout: readTimeout}})
	_, lines, _ := openStream(t, base, "slowpoke")
	res, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(`{"chat":"slowpoke","text":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "offline") {
		t.Fatalf("turn slower than ReadTimeout: %d %s", res.StatusCode, b)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("event stream closed by the read timeout")
			}
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, "offline") {
				return
			}
		case <-deadline:
			t.Fatal("the reply never reached the event stream")
		}
	}
}

// TestHTTP_ConnectionCap: past MaxConns, a new connection is not served
// until one closes.
func TestHTTP_ConnectionCap(t *testing.T) {
	base := serve(t, daemon.Options{HTTP: daemon.HTTPLimits{MaxConns: 2}})
	_, _, stop1 := openStream(t, base, "a")
	openStream(t, base, "b")
	quick := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if res, err := quick.Get(base + "/healthz"); err == nil {
		res.Body.Close()
		t.Fatalf("a third connection was served past MaxConns=2 (%d)", res.StatusCode)
	}
	stop1()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := quick.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served after a connection closed: %v", err)
		}
	}
}

// TestHTTP_StreamsPerClient: one client cannot hold more event streams
// than its share.
func TestHTTP_StreamsPerClient(t *testing.T) {
	base := serve(t, daemon.Options{HTTP: daemon.HTTPLimits{StreamsPerClient: 2}})
	openStream(t, base, "x")
	_, _, stop := openStream(t, base, "y")
	code, e := do(t, newReq(t, http.MethodGet, base+"/api/chat/z/events", "", nil))
	if code != http.StatusTooManyRequests || e.Error.Code != "too_many_streams" {
		t.Fatalf("third stream: %d %q", code, e.Error.Code)
	}
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, lines, stopZ := openStream(t, base, "z")
		if res.StatusCode == http.StatusOK {
			if l := <-lines; l != ": connected" {
				t.Fatalf("first line %q", l)
			}
			stopZ()
			return
		}
		stopZ()
		if time.Now().After(deadline) {
			t.Fatalf("a freed stream slot was not reused: %d", res.StatusCode)
		}
	}
}

// slowModel is the offline assistant, each call taking delay.
type slowModel struct{ delay time.Duration }

func (m slowModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return model.Response{}, ctx.Err()
	}
	return model.Offline{}.Complete(ctx, req)
}
