package discordtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// voiceFlag is Discord's IS_VOICE_MESSAGE message flag (1<<13).
const voiceFlag = 1 << 13

// Reference is a message_reference: the message a post replies to.
type Reference struct {
	MessageID       string `json:"message_id"`
	ChannelID       string `json:"channel_id,omitempty"`
	FailIfNotExists *bool  `json:"fail_if_not_exists,omitempty"`
}

// AttachmentMeta is one entry of a post's payload "attachments": the
// metadata Discord needs for a voice message (duration, base64 waveform).
type AttachmentMeta struct {
	ID           FlexID  `json:"id"`
	Filename     string  `json:"filename"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Waveform     string  `json:"waveform,omitempty"`
}

// FlexID is an id that Discord accepts as a JSON string or number.
type FlexID string

// UnmarshalJSON accepts "0" and 0 alike.
func (f *FlexID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = FlexID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("attachment id %s: %w", b, err)
	}
	*f = FlexID(n.String())
	return nil
}

// File is one uploaded multipart file part (files[n]).
type File struct {
	Field       string // "files[0]"
	Name        string // the part's filename
	ContentType string
	Data        []byte
}

// Post is one request that creates or edits a message, as the fake saw it.
// Values returned by the fake are read-only.
type Post struct {
	Seq       int    // order among all attempts, from 1
	Method    string // "POST" or "PATCH"
	ChannelID string
	// MessageID is the id the fake assigned (POST) or edited (PATCH); empty
	// when the request was refused.
	MessageID   string
	Status      int // the HTTP status the fake answered
	Content     string
	Flags       int
	Reference   *Reference
	Attachments []AttachmentMeta
	Files       []File
	Multipart   bool
	// Nonce and EnforceNonce are the client's idempotency key: a repeated
	// nonce with enforce_nonce gets the first message back, not a new one.
	Nonce        string
	EnforceNonce bool
	// Duplicate marks a repeat the fake answered with the earlier message
	// (MessageID is then empty: nothing new was created).
	Duplicate bool
	// Payload is the raw JSON body or payload_json part.
	Payload json.RawMessage
	At      time.Time
}

// IsVoice reports whether the post carries the voice-message flag.
func (p Post) IsVoice() bool { return p.Flags&voiceFlag != 0 }

// ThreadStart records a thread the bot started from a message.
type ThreadStart struct {
	ParentID, MessageID, ThreadID, Name string
}

// Failure is an error answer the fake gives instead of accepting a post.
type Failure struct {
	Status  int
	Code    int
	Message string
	// RetryAfter is sent for 429s, in X-RateLimit-Reset-After and the body's
	// retry_after.
	RetryAfter time.Duration
	Global     bool
	// AfterCreate creates the message and then answers the failure anyway,
	// as when Discord's answer is lost: a client that retries without a
	// nonce posts the reply twice.
	AfterCreate bool
}

// RateLimited is a 429 asking the client to wait d.
func RateLimited(d time.Duration) Failure {
	return Failure{Status: http.StatusTooManyRequests, Message: "You are being rate limited.", RetryAfter: d}
}

// VoiceForbidden is Discord's 50173, "Cannot send voice messages in this channel".
func VoiceForbidden() Failure {
	return Failure{Status: http.StatusForbidden, Code: 50173, Message: "Cannot send voice messages in this channel"}
}

// MissingPermissions is Discord's 50013 (e.g. no ATTACH_FILES).
func MissingPermissions() Failure {
	return Failure{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"}
}

// TooLarge is Discord's 413 with code 40005.
func TooLarge() Failure {
	return Failure{Status: http.StatusRequestEntityTooLarge, Code: 40005, Message: "Request entity too large"}
}

// UnknownChannel is Discord's 404 with code 10003.
func UnknownChannel() Failure {
	return Failure{Status: http.StatusNotFound, Code: 10003, Message: "Unknown Channel"}
}

// ServerError is a 500.
func ServerError() Failure {
	return Failure{Status: http.StatusInternalServerError, Message: "500: Internal Server Error"}
}

// FailPosts makes the next n message posts to channel answer f (edits,
// typing and other channels are unaffected).
func (s *Server) FailPosts(channel string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures[channel] = append(s.failures[channel], f)
	}
}

// ForbidThreads makes channel refuse to start threads with 50013 Missing
// Permissions, as a channel where the bot lacks CREATE_PUBLIC_THREADS does.
func (s *Server) ForbidThreads(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noThreads[channel] = true
}

// ForbidVoice makes channel refuse every voice message (flag 8192) with
// 50173, as a channel without SEND_VOICE_MESSAGES does. Plain attachments
// still go through.
func (s *Server) ForbidVoice(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noVoice[channel] = true
}

// ForbidFiles makes channel refuse every post with a file with 50013, as a
// channel without ATTACH_FILES does.
func (s *Server) ForbidFiles(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noFiles[channel] = true
}

// SetUploadLimit sets the largest file the fake accepts (default 10 MiB);
// larger files get 413/40005.
func (s *Server) SetUploadLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadLimit = n
}

// AddChannel registers a channel for GET /channels/{id}.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
}

// PutCDN serves data at /cdn/<path> and returns its URL.
func (s *Server) PutCDN(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	path = strings.TrimPrefix(path, "/")
	s.cdn[path] = data
	return s.URL + "/cdn/" + path
}

// CDNGets counts attachment downloads.
func (s *Server) CDNGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cdnGets
}

// Posts returns the accepted posts and edits, in the order they arrived.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	for _, p := range s.attempts {
		if p.MessageID != "" {
			out = append(out, p)
		}
	}
	return out
}

// PostsTo returns the accepted posts and edits in channel.
func (s *Server) PostsTo(channel string) []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	for _, p := range s.attempts {
		if p.MessageID != "" && p.ChannelID == channel {
			out = append(out, p)
		}
	}
	return out
}

// Attempts returns every post and edit, refused ones included.
func (s *Server) Attempts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.attempts...)
}

// Typing counts typing indicators sent to channel.
func (s *Server) Typing(channel string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channel]
}

// Threads returns the threads the bot started.
func (s *Server) Threads() []ThreadStart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ThreadStart(nil), s.threads...)
}

// WaitPosts waits until at least n posts were accepted and returns them all.
func (s *Server) WaitPosts(tb testing.TB, n int) []Post {
	tb.Helper()
	s.Await(tb, fmt.Sprintf("%d posts", n), func() bool { return len(s.Posts()) >= n })
	return s.Posts()
}

// WaitPostsTo waits until at least n posts were accepted in channel and
// returns that channel's posts.
func (s *Server) WaitPostsTo(tb testing.TB, channel string, n int) []Post {
	tb.Helper()
	s.Await(tb, fmt.Sprintf("%d posts to channel %s", n, channel), func() bool { return len(s.PostsTo(channel)) >= n })
	return s.PostsTo(channel)
}

func (s *Server) handleChannel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c, ok := s.channels[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeFailure(w, UnknownChannel())
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleTyping(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.typing[r.PathValue("id")]++
	s.notifyLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleCDN(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.cdn[r.PathValue("path")]
	if ok {
		s.cdnGets++
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

type postPayload struct {
	Nonce            FlexID           `json:"nonce"`
	EnforceNonce     bool             `json:"enforce_nonce"`
	Content          string           `json:"content"`
	Flags            int              `json:"flags"`
	MessageReference *Reference       `json:"message_reference"`
	Attachments      []AttachmentMeta `json:"attachments"`
}

// handlePost creates a message from a JSON or multipart body, or refuses it
// with the next queued failure or a channel rule.
func (s *Server) handlePost(w http.ResponseWriter, r *http.Request) {
	p, err := parsePost(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: "+err.Error())
		return
	}
	ch := r.PathValue("id")
	p.Method, p.ChannelID, p.At = http.MethodPost, ch, time.Now()

	s.mu.Lock()
	p.Seq = len(s.attempts) + 1
	if prev, ok := s.byNonceLocked(ch, p); ok {
		// enforce_nonce: the message exists already; answer it again.
		p.Status, p.Duplicate = http.StatusOK, true
		s.attempts = append(s.attempts, p)
		msg := s.messageLocked(prev)
		s.notifyLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, msg)
		return
	}
	fail := s.refusalLocked(ch, p)
	var msg map[string]any
	switch {
	case fail != nil && !fail.AfterCreate:
		p.Status = fail.Status
	case fail != nil:
		p.Status = fail.Status
		p.MessageID = s.newIDLocked()
		s.messages[p.MessageID] = &stored{channel: ch, content: p.Content, seq: p.Seq}
	default:
		p.Status = http.StatusOK
		p.MessageID = s.newIDLocked()
		msg = s.messageLocked(p)
		s.messages[p.MessageID] = &stored{channel: ch, content: p.Content, seq: p.Seq}
	}
	s.attempts = append(s.attempts, p)
	s.notifyLocked()
	s.mu.Unlock()

	if fail != nil {
		writeFailure(w, *fail)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// byNonceLocked finds the message an enforce_nonce post repeats. s.mu must
// be held.
func (s *Server) byNonceLocked(ch string, p Post) (Post, bool) {
	if !p.EnforceNonce || p.Nonce == "" {
		return Post{}, false
	}
	for _, prev := range s.attempts {
		if prev.ChannelID == ch && prev.MessageID != "" && prev.Nonce == p.Nonce && prev.Method == http.MethodPost {
			return prev, true
		}
	}
	return Post{}, false
}

// refusalLocked decides whether post p to ch fails, and how. s.mu must be held.
func (s *Server) refusalLocked(ch string, p Post) *Failure {
	if q := s.failures[ch]; len(q) > 0 {
		f := q[0]
		s.failures[ch] = q[1:]
		return &f
	}
	if p.IsVoice() && s.noVoice[ch] {
		f := VoiceForbidden()
		return &f
	}
	if len(p.Files) > 0 && s.noFiles[ch] {
		f := MissingPermissions()
		return &f
	}
	for _, f := range p.Files {
		if len(f.Data) > s.uploadLimit {
			t := TooLarge()
			return &t
		}
	}
	if p.IsVoice() && (p.Content != "" || len(p.Files) != 1) {
		// Discord's rule for voice messages: one audio file, no content.
		return &Failure{Status: http.StatusBadRequest, Code: 50035,
			Message: "Invalid Form Body: voice messages carry exactly one file and no content"}
	}
	if p.Content == "" && len(p.Files) == 0 {
		return &Failure{Status: http.StatusBadRequest, Code: 50006, Message: "Cannot send an empty message"}
	}
	if n := len([]rune(p.Content)); n > 2000 {
		return &Failure{Status: http.StatusBadRequest, Code: 50035,
			Message: fmt.Sprintf("Invalid Form Body: content of %d characters, limit 2000", n)}
	}
	return nil
}

// messageLocked builds the Message answer for an accepted post, serving its
// files from the CDN. s.mu must be held.
func (s *Server) messageLocked(p Post) map[string]any {
	atts := []map[string]any{}
	for i, f := range p.Files {
		id := s.newIDLocked()
		path := "attachments/" + p.ChannelID + "/" + id + "/" + f.Name
		s.cdn[path] = f.Data
		a := map[string]any{
			"id": id, "filename": f.Name, "size": len(f.Data),
			"url": s.URL + "/cdn/" + path, "content_type": f.ContentType,
		}
		if i < len(p.Attachments) {
			if m := p.Attachments[i]; m.DurationSecs != 0 || m.Waveform != "" {
				a["duration_secs"] = m.DurationSecs
				a["waveform"] = m.Waveform
			}
		}
		atts = append(atts, a)
	}
	msg := map[string]any{
		"id": p.MessageID, "channel_id": p.ChannelID, "content": p.Content,
		"timestamp": p.At.UTC().Format(time.RFC3339), "author": botUser(),
		"attachments": atts, "flags": p.Flags, "type": 0,
	}
	if p.Reference != nil {
		msg["type"] = 19
		msg["message_reference"] = p.Reference
	}
	return msg
}

func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	p, err := parsePost(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: "+err.Error())
		return
	}
	p.Method, p.ChannelID, p.MessageID, p.At = http.MethodPatch, r.PathValue("id"), r.PathValue("mid"), time.Now()
	p.Status = http.StatusOK
	s.mu.Lock()
	p.Seq = len(s.attempts) + 1
	if fail := s.editRefusalLocked(p); fail != nil {
		p.Status, p.MessageID = fail.Status, ""
		s.attempts = append(s.attempts, p)
		s.notifyLocked()
		s.mu.Unlock()
		writeFailure(w, *fail)
		return
	}
	s.messages[p.MessageID].content = p.Content
	s.attempts = append(s.attempts, p)
	msg := s.messageLocked(p)
	s.notifyLocked()
	s.mu.Unlock()
	msg["edited_timestamp"] = p.At.UTC().Format(time.RFC3339)
	writeJSON(w, http.StatusOK, msg)
}

func (s *Server) handleThreadStart(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: "+err.Error())
		return
	}
	parent := r.PathValue("id")
	s.mu.Lock()
	if s.noThreads[parent] {
		s.mu.Unlock()
		f := MissingPermissions()
		writeFailure(w, f)
		return
	}
	c := Channel{ID: s.newIDLocked(), Type: ChannelPublicThread, GuildID: s.channels[parent].GuildID,
		ParentID: parent, OwnerID: BotID, Name: body.Name}
	s.channels[c.ID] = c
	s.threads = append(s.threads, ThreadStart{ParentID: parent, MessageID: r.PathValue("mid"), ThreadID: c.ID, Name: body.Name})
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, c)
}

// parsePost reads a message body: JSON, or multipart with payload_json and
// files[n] parts, as discordgo sends them.
func parsePost(r *http.Request) (Post, error) {
	var p Post
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		p.Multipart = true
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return p, fmt.Errorf("multipart: %w", err)
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return p, fmt.Errorf("multipart part %q: %w", part.FormName(), err)
			}
			switch name := part.FormName(); {
			case name == "payload_json":
				p.Payload = data
			case strings.HasPrefix(name, "files["):
				p.Files = append(p.Files, File{Field: name, Name: part.FileName(),
					ContentType: part.Header.Get("Content-Type"), Data: data})
			}
		}
	} else {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return p, fmt.Errorf("read body: %w", err)
		}
		p.Payload = data
	}
	if len(bytes.TrimSpace(p.Payload)) == 0 {
		return p, nil
	}
	var pl postPayload
	if err := json.Unmarshal(p.Payload, &pl); err != nil {
		return p, fmt.Errorf("payload: %w", err)
	}
	p.Content, p.Flags, p.Reference, p.Attachments = pl.Content, pl.Flags, pl.MessageReference, pl.Attachments
	p.Nonce, p.EnforceNonce = string(pl.Nonce), pl.EnforceNonce
	return p, nil
}

// writeFailure answers f the way Discord does; a 429 carries the rate-limit
// headers discordgo reads (X-RateLimit-Reset-After) and retry_after.
func writeFailure(w http.ResponseWriter, f Failure) {
	if f.Status == http.StatusTooManyRequests {
		secs := f.RetryAfter.Seconds()
		h := w.Header()
		h.Set("X-RateLimit-Limit", "5")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
		if f.Global {
			h.Set("X-RateLimit-Global", "true")
		}
		writeJSON(w, f.Status, map[string]any{"message": f.Message, "retry_after": secs, "global": f.Global})
		return
	}
	writeError(w, f.Status, f.Code, f.Message)
}
