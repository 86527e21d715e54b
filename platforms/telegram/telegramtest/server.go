// Package telegramtest is a fake Telegram Bot API: a real HTTP server on
// 127.0.0.1 that speaks the wire format of api.telegram.org closely enough for
// github.com/go-telegram/bot and hermesd's adapter to run against it unchanged.
//
// It exists so that tests, benchmarks and load drivers exercise the real
// client code (multipart forms, long polling, error codes) without a network.
// It records every call, lets a test inject user messages as updates, serves
// files for getFile downloads, pushes updates to a webhook when one is set,
// and can be told to fail the next calls of a method the way Telegram does
// (429 with retry_after, 403 blocked, 400 VOICE_MESSAGES_FORBIDDEN, 400
// can't parse entities, 500, or a request that never answers).
//
// All methods are safe for concurrent use.
package telegramtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults for a Server started without options.
const (
	// DefaultToken is the bot token the fake accepts; the library derives
	// the bot id from the digits before the colon.
	DefaultToken = "123456789:TEST-hermesd-fake-token"
	// DefaultBotUsername is the username getMe reports, without the "@".
	DefaultBotUsername = "fake_bot"
)

// TB is the part of testing.TB the fake needs. *testing.T and *testing.B
// satisfy it; a load driver outside `go test` can implement it too.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Option configures a Server.
type Option func(*Server)

// WithToken sets the token the fake accepts (it must look like "<id>:<secret>").
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithBotUsername sets the username getMe reports.
func WithBotUsername(name string) Option { return func(s *Server) { s.botName = name } }

// Server is a running fake Bot API. Create it with NewServer or Start.
type Server struct {
	token   string
	botID   int64
	botName string

	srv       *httptest.Server
	closed    chan struct{}
	closeOnce sync.Once
	bg        sync.WaitGroup // webhook pushers

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every state change
	calls      []Call
	counts     map[string]int // calls per method
	pending    []pending      // unconfirmed updates, ascending id
	nextUpdate int64
	confirmed  int64 // every update id below this was confirmed by an offset
	pollGen    int64
	msgIDs     map[int64]int    // last message id per chat
	chatTypes  map[int64]string // chat id -> type, learned from injected updates
	files      map[string]storedFile
	nextFile   int
	texts      map[msgRef]string // current text of bot messages, for edits
	deleted    map[msgRef]bool   // bot messages deleted since
	faults     []*fault
	hook       webhook
	// pollConflicts counts getUpdates calls ended by a newer one (409):
	// two pollers at once.
	pollConflicts int
}

type pending struct {
	id        int64
	chat      int64
	body      []byte
	inflight  bool      // being pushed to the webhook
	notBefore time.Time // webhook retry backoff
}

type storedFile struct {
	uniqueID string
	path     string
	data     []byte
}

type msgRef struct {
	chat int64
	id   int
}

type webhook struct {
	url, secret string
	maxConn     int
	gen         int64
	busyChats   map[int64]bool
	active      int
}

// Start starts a fake Bot API on 127.0.0.1. Call Close when done.
func Start(opts ...Option) (*Server, error) {
	s := &Server{
		token:     DefaultToken,
		botName:   DefaultBotUsername,
		closed:    make(chan struct{}),
		changed:   make(chan struct{}),
		counts:    map[string]int{},
		msgIDs:    map[int64]int{},
		chatTypes: map[int64]string{},
		files:     map[string]storedFile{},
		texts:     map[msgRef]string{},
		deleted:   map[msgRef]bool{},
	}
	for _, o := range opts {
		o(s)
	}
	idPart, _, ok := strings.Cut(s.token, ":")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if !ok || err != nil || id <= 0 {
		return nil, fmt.Errorf("telegramtest: token %q must look like <bot id>:<secret>", s.token)
	}
	s.botID = id
	s.nextUpdate = 1
	s.srv = httptest.NewServer(s)
	return s, nil
}

// NewServer starts a fake Bot API for one test and closes it at cleanup.
func NewServer(tb TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Start(opts...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server. Hung requests and long polls end at once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		s.hook = webhook{}
		s.broadcastLocked()
		s.mu.Unlock()
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.bg.Wait()
	})
}

// URL is the base URL to use instead of https://api.telegram.org.
func (s *Server) URL() string { return s.srv.URL }

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.token }

// BotID is the bot's user id (the digits of the token before the colon).
func (s *Server) BotID() int64 { return s.botID }

// BotUsername is the bot's username without "@".
func (s *Server) BotUsername() string { return s.botName }

// broadcastLocked wakes every waiter; s.mu must be held.
func (s *Server) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// apiError is a Bot API failure as the fake answers it.
type apiError struct {
	code       int
	desc       string
	retryAfter int
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.code, e.desc) }

func badRequest(format string, args ...any) *apiError {
	return &apiError{code: 400, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
}

// ServeHTTP routes Bot API calls and file downloads. Every Bot API answer is
// JSON, as the client libraries require.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeJSON(w, &apiError{code: 404, desc: "Not Found"}, nil)
		return
	}
	if token != s.token {
		writeJSON(w, &apiError{code: 401, desc: "Unauthorized"}, nil)
		return
	}
	fields, files, err := parseRequest(r)
	if err != nil {
		writeJSON(w, badRequest("can't parse request: %v", err), nil)
		return
	}
	call := Call{Method: method, Fields: fields, Files: files, Time: time.Now()}
	call.ChatID, _ = strconv.ParseInt(fields["chat_id"], 10, 64)

	if f := s.takeFault(method, call.ChatID); f != nil {
		call.Faulted = f.kind.name
		if f.kind.hang {
			s.record(call)
			select {
			case <-r.Context().Done():
			case <-s.closed:
			}
			return
		}
		e := f.kind.err()
		call.Code, call.Description = e.code, e.desc
		s.record(call)
		writeJSON(w, e, nil)
		return
	}

	if strings.EqualFold(method, "getUpdates") {
		s.record(call)
		s.getUpdates(w, r, fields)
		return
	}
	result, aerr := s.dispatch(&call)
	if aerr != nil {
		call.Code, call.Description = aerr.code, aerr.desc
	}
	s.record(call)
	writeJSON(w, aerr, result)
}

func (s *Server) dispatch(c *Call) (any, *apiError) {
	switch strings.ToLower(c.Method) {
	case "getme":
		return map[string]any{"id": s.botID, "is_bot": true, "first_name": "fake", "username": s.botName,
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false}, nil
	case "sendmessage":
		return s.sendMessage(c)
	case "sendvoice":
		return s.sendMedia(c, "voice", "audio/ogg")
	case "sendaudio":
		return s.sendMedia(c, "audio", "audio/mpeg")
	case "senddocument":
		return s.sendMedia(c, "document", "application/octet-stream")
	case "sendchataction":
		if c.ChatID == 0 || c.Fields["action"] == "" {
			return nil, badRequest("chat_id and action are required")
		}
		return true, nil
	case "editmessagetext":
		return s.editMessageText(c)
	case "sendmessagedraft":
		return s.sendMessageDraft(c)
	case "deletemessage":
		return s.deleteMessage(c)
	case "getfile":
		return s.getFile(c)
	case "setwebhook":
		return s.setWebhook(c)
	case "deletewebhook":
		return s.deleteWebhook(c)
	case "getwebhookinfo":
		s.mu.Lock()
		defer s.mu.Unlock()
		return map[string]any{"url": s.hook.url, "has_custom_certificate": false, "pending_update_count": len(s.pending)}, nil
	}
	return nil, &apiError{code: 404, desc: "Not Found: method not found"}
}

// writeJSON answers in the Bot API envelope. The HTTP status mirrors the
// error code, as Telegram's does.
func writeJSON(w http.ResponseWriter, e *apiError, result any) {
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"ok": e == nil}
	status := http.StatusOK
	if e != nil {
		status = e.code
		body["error_code"] = e.code
		body["description"] = e.desc
		if e.retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": e.retryAfter}
		}
	} else {
		body["result"] = result
	}
	data, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"ok":false,"error_code":500,"description":"Internal Server Error: encode"}`)
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// parseRequest reads a call's parameters from a multipart form (what
// go-telegram/bot sends, with an empty body for parameterless calls), a
// urlencoded form, a JSON object, or the query string.
func parseRequest(r *http.Request) (map[string]string, map[string]File, error) {
	fields := map[string]string{}
	files := map[string]File{}
	for k, v := range r.URL.Query() {
		fields[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(64 << 20); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		if r.MultipartForm == nil {
			return fields, files, nil
		}
		for k, v := range r.MultipartForm.Value {
			fields[k] = v[0]
		}
		for k, hs := range r.MultipartForm.File {
			f, err := hs[0].Open()
			if err != nil {
				return nil, nil, err
			}
			data, err := io.ReadAll(f)
			_ = f.Close()
			if err != nil {
				return nil, nil, err
			}
			files[k] = File{Name: hs[0].Filename, Data: data}
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		for k, v := range r.PostForm {
			fields[k] = v[0]
		}
	case "application/json":
		var obj map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&obj); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		for k, raw := range obj {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				fields[k] = str
			} else {
				fields[k] = string(raw)
			}
		}
	}
	return fields, files, nil
}

// serveFile answers GET /file/bot<token>/<path> with the raw bytes.
func (s *Server) serveFile(w http.ResponseWriter, rest string) {
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != s.token {
		writeJSON(w, &apiError{code: 401, desc: "Unauthorized"}, nil)
		return
	}
	s.mu.Lock()
	var data []byte
	for _, f := range s.files {
		if f.path == path {
			data = f.data
		}
	}
	s.mu.Unlock()
	if data == nil {
		writeJSON(w, &apiError{code: 404, desc: "Not Found"}, nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
