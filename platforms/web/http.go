package web

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

//go:embed page/index.html page/chat.js page/chat.css page/theme.css
var page embed.FS

// assets are the page's files besides index.html, by name, with their
// content types.
var assets = map[string]string{
	"chat.js":   "text/javascript; charset=utf-8",
	"chat.css":  "text/css; charset=utf-8",
	"theme.css": "text/css; charset=utf-8",
}

// pageCSP is the web chat's Content-Security-Policy: scripts, styles and
// connections only from hermesd itself, no inline script, no plugins, no
// framing, and images only from hermesd, so a Markdown image in a reply
// cannot make the browser call out. Media may also be a blob (a recording).
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"media-src 'self' blob:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// MaxBodyBytes is the largest POST /api/chat body accepted; the text limit
// itself is the runtime's (docs/api.md).
const MaxBodyBytes = 64 << 10

// Routes registers the web chat on mux. replyTimeout bounds how long
// POST /api/chat waits for the turn's replies.
func (a *Adapter) Routes(mux *http.ServeMux, replyTimeout time.Duration) {
	mux.HandleFunc("GET /{$}", a.handlePage)
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) { a.handleChat(w, r, replyTimeout) })
	mux.HandleFunc("GET /api/chat/{id}/events", a.handleEvents)
	mux.HandleFunc("GET /api/chat/{id}/history", a.handleHistory)
	mux.HandleFunc("GET /media/{name}", a.handleMedia)
	mux.HandleFunc("GET /assets/{name}", a.handleAsset)
	mux.HandleFunc("POST /api/chat/{id}/voice", func(w http.ResponseWriter, r *http.Request) { a.handleVoice(w, r, replyTimeout) })
}

// handleAsset serves the page's script and style sheets (theme.css is
// shared with the /status page).
func (a *Adapter) handleAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ct, ok := assets[name]
	if !ok {
		WriteError(w, http.StatusNotFound, "not_found", "no such asset")
		return
	}
	b, err := page.ReadFile("page/" + name)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "asset_missing", "asset missing from the binary")
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

func (a *Adapter) handlePage(w http.ResponseWriter, r *http.Request) {
	b, err := page.ReadFile("page/index.html")
	if err != nil {
		http.Error(w, "page missing", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(b)
}

// chatRequest is the body of POST /api/chat.
type chatRequest struct {
	Chat string `json:"chat"`
	Text string `json:"text"`
	// Files are images and documents sent with the text (uploads.go).
	Files []upload `json:"files,omitempty"`
}

// chatResponse is its answer.
type chatResponse struct {
	Replies []Reply `json:"replies"`
}

// APIError is the body of every error answer: {"error": {"code", "message"}}.
type APIError struct {
	Error APIErrorBody `json:"error"`
}

// WriteError answers with status and a JSON error body.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, APIError{APIErrorBody{code, msg}})
}

// WriteJSON answers with status and v as a JSON body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Adapter) handleChat(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	if !IsJSON(r.Header.Get("Content-Type")) {
		// No HTML form can send application/json, and a cross-site fetch
		// that does needs a CORS preflight hermesd never grants.
		WriteError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as Content-Type: application/json")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, a.bodyLimit())
	var req chatRequest
	if err := DecodeJSON(r.Body, &req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body over %d bytes", a.bodyLimit()))
			return
		}
		WriteError(w, http.StatusBadRequest, "malformed_json", "body must be one JSON object like {\"chat\": \"<id>\", \"text\": \"...\"}: "+err.Error())
		return
	}
	s, err := Session(req.Chat)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "bad_chat", err.Error())
		return
	}
	if strings.TrimSpace(req.Text) == "" && len(req.Files) == 0 {
		WriteError(w, http.StatusBadRequest, "empty_text", "text is empty")
		return
	}
	if len(req.Files) > 0 && a.files == nil {
		WriteError(w, http.StatusBadRequest, "no_files", "this server does not take files")
		return
	}
	if len(req.Files) > maxUploads {
		WriteError(w, http.StatusBadRequest, "too_many_files", fmt.Sprintf("at most %d files per message", maxUploads))
		return
	}
	um := &messages.UserMessage{Text: req.Text}
	if err := a.attachUploads(r.Context(), req.Files, um); err != nil {
		return // the client left
	}
	if replies, ok := a.submit(w, r, s, um, timeout); ok {
		WriteJSON(w, http.StatusOK, chatResponse{Replies: replies})
	}
}

// submit hands m (its text, voice fields and attachments set) to session s
// and waits for the turn's replies. When it reports false it has answered
// the request itself: an error, or a timeout with the replies so far.
func (a *Adapter) submit(w http.ResponseWriter, r *http.Request, s messages.Session, m *messages.UserMessage, timeout time.Duration) ([]Reply, bool) {
	in := a.in.Load()
	if in == nil {
		WriteError(w, http.StatusServiceUnavailable, "not_ready", "the web chat is not accepting messages")
		return nil, false
	}
	msgID := fmt.Sprintf("%s-m%d", a.prefix, a.seq.Add(1))
	wt := a.wait(msgID)
	m.SessionKey, m.MessageId, m.SenderId, m.SenderName = s.Key(), msgID, s.ChatID(), "web"
	m.ReceivedUnixMs = time.Now().UnixMilli()
	if err := (*in)(r.Context(), m); err != nil {
		a.collect(msgID, wt)
		if errors.Is(err, platforms.ErrTooLarge) {
			WriteError(w, http.StatusRequestEntityTooLarge, "too_large", err.Error())
			return nil, false
		}
		a.log.Warn("web message not accepted", "session", s.Key(), "err", err)
		WriteError(w, http.StatusServiceUnavailable, "not_accepted", err.Error())
		return nil, false
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-wt.done:
		return a.collect(msgID, wt), true
	case <-t.C:
		// The turn goes on; its replies still reach the event stream.
		replies := a.collect(msgID, wt)
		WriteJSON(w, http.StatusGatewayTimeout, struct {
			Error   APIErrorBody `json:"error"`
			Replies []Reply      `json:"replies"`
		}{APIErrorBody{"timeout", fmt.Sprintf("no complete answer within %s; later replies arrive on /api/chat/%s/events", timeout, s.ChatID())}, replies})
	case <-r.Context().Done():
		a.collect(msgID, wt)
	}
	return nil, false
}

// APIErrorBody is the inside of APIError.
type APIErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (a *Adapter) handleEvents(w http.ResponseWriter, r *http.Request) {
	chat := r.PathValue("id")
	if _, err := Session(chat); err != nil {
		WriteError(w, http.StatusBadRequest, "bad_chat", err.Error())
		return
	}
	client := clientOf(r)
	if !a.openStream(client) {
		WriteError(w, http.StatusTooManyRequests, "too_many_streams",
			fmt.Sprintf("at most %d event streams per client; close one first", a.maxStreams))
		return
	}
	defer a.closeStream(client)
	// The server's read timeout bounds the request, not the stream (net/http
	// lifts it once the body is read), so each write gets a deadline: a
	// client that stops reading is cut off rather than holding a goroutine.
	rc := http.NewResponseController(w)
	write := func(format string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sub := a.subscribe(chat)
	defer a.unsubscribe(chat, sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !write(": connected\n\n") {
		return
	}
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	for n := 1; ; n++ {
		select {
		case <-r.Context().Done():
			return
		case <-a.stopped:
			return
		case <-ping.C:
			if !write(": ping\n\n") {
				return
			}
		case ev, ok := <-sub.ch:
			if !ok {
				return // too slow: the client reconnects
			}
			name, body := "reply", any(ev)
			if ev.draft != nil {
				name, body = "draft", ev.draft
			}
			b, _ := json.Marshal(body)
			if !write("id: %d\nevent: %s\ndata: %s\n\n", n, name, b) {
				return
			}
		}
	}
}

const (
	// streamPing keeps idle event streams open through proxies.
	streamPing = 15 * time.Second
	// streamWriteTimeout bounds one write to an event stream.
	streamWriteTimeout = 30 * time.Second
)

// clientOf names the client of r for per-client limits: its IP address.
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// openStream counts an event stream of client, or reports false when it
// already has the most it may.
func (a *Adapter) openStream(client string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams[client] >= a.maxStreams {
		return false
	}
	a.streams[client]++
	return true
}

func (a *Adapter) closeStream(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams[client]--; a.streams[client] <= 0 {
		delete(a.streams, client)
	}
}

func (a *Adapter) handleMedia(w http.ResponseWriter, r *http.Request) {
	it, ok := a.media.get(r.PathValue("name"))
	if !ok {
		WriteError(w, http.StatusNotFound, "not_found", "no such media (voice replies are kept in memory for a while)")
		return
	}
	w.Header().Set("Content-Type", it.format.MIMEType())
	w.Header().Set("Content-Length", strconv.Itoa(len(it.data)))
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(it.data)
}
