package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hermesd/hermesd/model/modeltest"
)

// fakeModel is a running chat-completions endpoint on 127.0.0.1.
type fakeModel struct {
	url   string       // base URL, ending in /v1
	calls func() int64 // chat-completion requests so far
	bytes func() int64 // request body bytes so far (0 when not counted)
	conns func() int64 // TCP connections accepted so far (0 when not counted)
	close func()
}

// startModel starts the fake model named by -model. "instant" is
// modeltest.Instant (always "ok": replies can only be matched by chat);
// "marker" answers just as fast but copies the message's marker, so each
// reply names the message it answers.
func startModel(kind string, tb *fakeTB) fakeModel {
	if kind == "instant" {
		s := modeltest.NewServer(tb, modeltest.Instant())
		return fakeModel{url: s.URL(), calls: func() int64 { return int64(s.Calls()) }, bytes: func() int64 { return 0 },
			conns: func() int64 { return 0 }, close: func() {}}
	}
	m := &markerModel{}
	srv := httptest.NewUnstartedServer(m)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			m.conns.Add(1)
		}
	}
	srv.Start()
	return fakeModel{url: srv.URL + "/v1", calls: m.calls.Load, bytes: m.bytes.Load, conns: m.conns.Load, close: srv.Close}
}

// markerModel is an instant OpenAI-compatible chat-completions endpoint: it
// reads the request body without decoding it, finds the last load marker in
// it (the one in the newest user message: the history comes first, tools
// carry none) and answers "ok <marker>" from prepared bytes. To hermesd's
// background skill reviews and memory sweeps it answers NOTHING, as their
// instructions ask of a model that saved nothing (this one never calls a
// tool); otherwise hermesd would post the answer as a "💾" note.
type markerModel struct {
	calls atomic.Int64
	bytes atomic.Int64
	conns atomic.Int64
}

var (
	answerHead = []byte(`{"id":"chatcmpl-load","object":"chat.completion","created":0,"model":"load",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"ok`)
	answerTail = []byte(`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	// backgroundContract is in the instructions of hermesd's background
	// reviews (actors/background.go); they ask for exactly NOTHING when
	// nothing was saved.
	backgroundContract = []byte("exactly NOTHING if you saved nothing")
	answerNothing      = []byte(`{"id":"chatcmpl-load","object":"chat.completion","created":0,"model":"load",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"NOTHING"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

func (m *markerModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"no route for %s %s","type":"invalid_request_error"}}`, r.Method, strconv.Quote(r.URL.Path))
		return
	}
	m.calls.Add(1)
	buf := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(buf)
	buf.Reset()
	n, err := buf.ReadFrom(r.Body)
	if err != nil {
		return // the client went away
	}
	m.bytes.Add(n)
	out := make([]byte, 0, len(answerHead)+32+len(answerTail))
	switch body := buf.Bytes(); {
	case bytes.Contains(body, backgroundContract):
		out = append(out, answerNothing...)
	default:
		out = append(out, answerHead...)
		if mk := lastMarker(body); mk != nil {
			out = append(append(out, ' '), mk...)
		}
		out = append(out, answerTail...)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// markerPrefix starts every load marker: {load:<conversation>:<seq>}.
// Braces and colons survive JSON, Markdown→HTML conversion and Discord.
const markerPrefix = "{load:"

// formatMarker names message seq (from 1) of conversation conv.
func formatMarker(conv, seq int) string {
	return markerPrefix + strconv.Itoa(conv) + ":" + strconv.Itoa(seq) + "}"
}

// lastMarker returns the last well-formed marker in b, or nil.
func lastMarker(b []byte) []byte {
	for end := len(b); ; {
		i := bytes.LastIndex(b[:end], []byte(markerPrefix))
		if i < 0 {
			return nil
		}
		if n := markerLen(b[i:]); n > 0 {
			return b[i : i+n]
		}
		end = i
	}
}

// markerLen is the length of the marker b starts with, 0 if it is malformed.
func markerLen(b []byte) int {
	colons := 0
	for j := len(markerPrefix); j < len(b) && j < 48; j++ {
		switch c := b[j]; {
		case c >= '0' && c <= '9':
		case c == ':' && colons == 0 && j > len(markerPrefix):
			colons++
		case c == '}' && colons == 1 && b[j-1] != ':':
			return j + 1
		default:
			return 0
		}
	}
	return 0
}

// parseMarker finds the last marker in text.
func parseMarker(text string) (conv, seq int, ok bool) {
	mk := lastMarker([]byte(text))
	if mk == nil {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(string(mk[len(markerPrefix):len(mk)-1]), ":")
	conv, err1 := strconv.Atoi(a)
	seq, err2 := strconv.Atoi(b)
	return conv, seq, err1 == nil && err2 == nil
}
