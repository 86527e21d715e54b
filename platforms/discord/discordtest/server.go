// Package discordtest is a fake Discord for tests, benchmarks and load
// drivers: the REST API and the websocket gateway that
// github.com/bwmarrin/discordgo talks to, served on 127.0.0.1. It records
// what a bot posts (content, flags, message references, attachment metadata
// and file bytes), injects gateway events such as MESSAGE_CREATE, and fails
// requests on demand (429, 50173, 40005, 10003, 500, a dropped socket) so the
// adapter's limits and fallbacks can be exercised without the internet.
//
// It is not a _test file on purpose: the adapter's tests, benchmarks and the
// load driver all share it, as raft ships its in-memory transport.
//
// Every method is safe for concurrent use. Methods that take a testing.TB
// and fail the test (the Wait* family) must be called from the test's own
// goroutine; the rest report through return values or tb.Errorf.
package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Fixed identities of the fake. Tests compare against them.
const (
	// Token is the bot token the fake accepts; pass it as the adapter's token
	// (with or without the "Bot " prefix).
	Token = "test-token"
	// BotID is the bot's user id, sent in READY.
	BotID = "100"
	// BotName is the bot's user name, sent in READY.
	BotName = "hermes"
)

// Discord channel types the fake knows (a subset of Discord's).
const (
	ChannelText         = 0
	ChannelDM           = 1
	ChannelPublicThread = 11
)

// DefaultUploadLimit is Discord's default per-file upload limit (10 MiB).
// Larger files are refused with 413 and code 40005, as Discord does.
const DefaultUploadLimit = 10 << 20

// Channel is what GET /channels/{id} answers: enough for an adapter to tell a
// thread (and its parent) from a plain guild channel or a DM.
type Channel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	OwnerID  string `json:"owner_id,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Server is a fake Discord. Create it with NewServer; it stops when the test
// ends.
type Server struct {
	// URL is the base URL (http://127.0.0.1:port) that replaces
	// https://discord.com for REST; the gateway URL comes from it.
	URL string

	// Timeout bounds every Wait* call. Set it before the first wait.
	Timeout time.Duration

	tb       testing.TB
	hs       *httptest.Server
	upgrader websocket.Upgrader

	// mu guards every field below, the websocket connection and all writes
	// to it (gorilla allows a single concurrent writer).
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every observable change

	// gateway
	conn       *websocket.Conn
	connReady  bool // READY or RESUMED was sent on conn
	conns      map[*websocket.Conn]struct{}
	sessionID  string
	seq        int64
	frames     []*frame
	replayAll  bool
	identifies int
	resumes    int
	intents    int64
	refuseCode int
	refuseText string

	// REST
	nextID      int64
	channels    map[string]Channel
	cdn         map[string][]byte
	failures    map[string][]Failure
	noVoice     map[string]bool
	noFiles     map[string]bool
	noThreads   map[string]bool
	uploadLimit int
	attempts    []Post
	typing      map[string]int
	threads     []ThreadStart
	cdnGets     int
	// messages holds the current content of every message created, by id;
	// editFailures are queued answers to edits, by channel (drafts.go).
	messages     map[string]*stored
	editFailures map[string][]Failure
	deletes      []string
}

// NewServer starts a fake Discord on 127.0.0.1 and stops it when tb ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		Timeout:      10 * time.Second,
		tb:           tb,
		changed:      make(chan struct{}),
		conns:        make(map[*websocket.Conn]struct{}),
		nextID:       1_000_000,
		channels:     make(map[string]Channel),
		cdn:          make(map[string][]byte),
		failures:     make(map[string][]Failure),
		noVoice:      make(map[string]bool),
		noFiles:      make(map[string]bool),
		noThreads:    make(map[string]bool),
		uploadLimit:  DefaultUploadLimit,
		typing:       make(map[string]int),
		messages:     make(map[string]*stored),
		editFailures: make(map[string][]Failure),
		upgrader: websocket.Upgrader{
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway", s.handleGateway)
	mux.HandleFunc("GET /api/v9/gateway/bot", s.handleGatewayBot)
	mux.HandleFunc("GET /ws/", s.serveWS)
	mux.HandleFunc("GET /api/v9/users/@me", s.auth(s.handleMe))
	mux.HandleFunc("GET /api/v9/channels/{id}", s.auth(s.handleChannel))
	mux.HandleFunc("POST /api/v9/channels/{id}/typing", s.auth(s.handleTyping))
	mux.HandleFunc("POST /api/v9/channels/{id}/messages", s.auth(s.handlePost))
	mux.HandleFunc("PATCH /api/v9/channels/{id}/messages/{mid}", s.auth(s.handleEdit))
	mux.HandleFunc("DELETE /api/v9/channels/{id}/messages/{mid}", s.auth(s.handleDelete))
	mux.HandleFunc("POST /api/v9/channels/{id}/messages/{mid}/threads", s.auth(s.handleThreadStart))
	mux.HandleFunc("GET /cdn/{path...}", s.handleCDN)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})
	s.hs = httptest.NewServer(mux)
	s.URL = s.hs.URL
	tb.Cleanup(s.close)
	return s
}

// close drops every websocket and stops the HTTP server. Hijacked websocket
// connections are not tracked by httptest, so they are closed here first.
func (s *Server) close() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.UnderlyingConn().Close()
	}
	s.conn, s.connReady = nil, false
	s.mu.Unlock()
	s.hs.Close()
}

// notifyLocked wakes every waiter. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newIDLocked returns a fresh snowflake-like id. s.mu must be held.
func (s *Server) newIDLocked() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Await blocks until cond reports true, re-evaluating it whenever the fake
// records something (a post, a connection, an injected event), and fails the
// test after s.Timeout. cond may call any method of s except Await and the
// Wait* family. Call it from the test goroutine.
func (s *Server) Await(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if err := s.await(what, s.Timeout, cond); err != nil {
		tb.Fatal(err)
	}
}

// await is Await without a testing.TB, for callers on other goroutines.
func (s *Server) await(what string, timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("discordtest: timed out after %v waiting for %s", timeout, what)
		}
	}
}

// AwaitErr is Await for goroutines that are not the test's (load drivers):
// it returns an error instead of failing the test.
func (s *Server) AwaitErr(what string, timeout time.Duration, cond func() bool) error {
	return s.await(what, timeout, cond)
}

// handleGateway answers GET /gateway with the fake's websocket URL.
func (s *Server) handleGateway(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.wsURL()})
}

// handleGatewayBot answers GET /gateway/bot: one shard, plenty of sessions.
func (s *Server) handleGatewayBot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"url":    s.wsURL(),
		"shards": 1,
		"session_start_limit": map[string]any{
			"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1,
		},
	})
}

func (s *Server) wsURL() string {
	return "ws://" + strings.TrimPrefix(s.URL, "http://") + "/ws"
}

// auth refuses requests without the bot token, as Discord does, so an
// adapter that forgets the "Bot " prefix fails loudly in tests.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bot "+Token {
			writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return
		}
		h(w, r)
	}
}

func (s *Server) handleMe(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, botUser())
}

func botUser() map[string]any {
	return map[string]any{"id": BotID, "username": BotName, "bot": true}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}
