package telegramtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Telegram's documented limits, counted in UTF-16 units after entity parsing.
const (
	textLimit    = 4096
	captionLimit = 1024
)

// utf16Len counts s in UTF-16 code units, as Telegram counts message length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// visible returns the text a user sees for text in parse mode mode.
func visible(text, mode string) (string, *apiError) {
	switch strings.ToLower(mode) {
	case "":
		return text, nil
	case "html":
		v, err := VisibleText(text)
		if err != nil {
			return "", badRequest("can't parse entities: %v", err)
		}
		return v, nil
	default:
		// MarkdownV2 and Markdown are not modelled: the text is counted as is.
		return text, nil
	}
}

func (s *Server) chatJSON(chat int64) map[string]any {
	typ := s.chatTypes[chat]
	if typ == "" {
		typ = "private"
		if chat < 0 {
			typ = "supergroup"
		}
	}
	m := map[string]any{"id": chat, "type": typ}
	if typ == "private" {
		m["first_name"] = "user"
	} else {
		m["title"] = "group " + strconv.FormatInt(chat, 10)
	}
	return m
}

// newBotMessageLocked allocates the next message id in chat and returns the
// common fields of a message the bot sent.
func (s *Server) newBotMessageLocked(c *Call) map[string]any {
	s.msgIDs[c.ChatID]++
	id := s.msgIDs[c.ChatID]
	c.MessageID = id
	m := map[string]any{
		"message_id": id,
		"date":       time.Now().Unix(),
		"chat":       s.chatJSON(c.ChatID),
		"from":       map[string]any{"id": s.botID, "is_bot": true, "first_name": "fake", "username": s.botName},
	}
	if th, err := strconv.Atoi(c.Fields["message_thread_id"]); err == nil && th != 0 {
		m["message_thread_id"] = th
		m["is_topic_message"] = true
	}
	if rp := c.Fields["reply_parameters"]; rp != "" {
		var p struct {
			MessageID int `json:"message_id"`
		}
		if json.Unmarshal([]byte(rp), &p) == nil && p.MessageID != 0 {
			m["reply_to_message"] = map[string]any{"message_id": p.MessageID, "date": time.Now().Unix(), "chat": s.chatJSON(c.ChatID)}
		}
	}
	return m
}

func (s *Server) sendMessage(c *Call) (any, *apiError) {
	if c.ChatID == 0 {
		return nil, badRequest("chat not found")
	}
	text, aerr := visible(c.Fields["text"], c.Fields["parse_mode"])
	if aerr != nil {
		return nil, aerr
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, badRequest("message text is empty")
	}
	if utf16Len(text) > textLimit {
		return nil, badRequest("message is too long")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.newBotMessageLocked(c)
	m["text"] = text
	s.texts[msgRef{c.ChatID, c.MessageID}] = c.Fields["text"]
	return m, nil
}

// sendMedia handles sendVoice, sendAudio and sendDocument: field is both
// the form field carrying the file and the message field describing it.
func (s *Server) sendMedia(c *Call, field, defaultMIME string) (any, *apiError) {
	if c.ChatID == 0 {
		return nil, badRequest("chat not found")
	}
	f, uploaded := c.Files[field]
	if !uploaded && c.Fields[field] == "" {
		return nil, badRequest("there is no %s in the request", field)
	}
	caption, aerr := visible(c.Fields["caption"], c.Fields["parse_mode"])
	if aerr != nil {
		return nil, aerr
	}
	caption = strings.TrimSpace(caption)
	if utf16Len(caption) > captionLimit {
		return nil, badRequest("message caption is too long")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.newBotMessageLocked(c)
	s.nextFile++
	fileID := field + "-bot-" + strconv.Itoa(s.nextFile)
	obj := map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID, "mime_type": defaultMIME}
	if uploaded {
		obj["file_size"] = len(f.Data)
		if field != "voice" {
			obj["file_name"] = f.Name
		}
	}
	if d, err := strconv.Atoi(c.Fields["duration"]); err == nil {
		obj["duration"] = d
	} else if field != "document" {
		obj["duration"] = 0
	}
	m[field] = obj
	if caption != "" {
		m["caption"] = caption
	}
	return m, nil
}

func (s *Server) editMessageText(c *Call) (any, *apiError) {
	id, err := strconv.Atoi(c.Fields["message_id"])
	if c.ChatID == 0 || err != nil {
		return nil, badRequest("message to edit not found")
	}
	c.MessageID = id
	text, aerr := visible(c.Fields["text"], c.Fields["parse_mode"])
	if aerr != nil {
		return nil, aerr
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, badRequest("message text is empty")
	}
	if utf16Len(text) > textLimit {
		return nil, badRequest("message is too long")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := msgRef{c.ChatID, id}
	old, ok := s.texts[ref]
	if !ok {
		return nil, badRequest("message to edit not found")
	}
	if old == c.Fields["text"] {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	s.texts[ref] = c.Fields["text"]
	return map[string]any{
		"message_id": id, "date": time.Now().Unix(), "edit_date": time.Now().Unix(),
		"chat": s.chatJSON(c.ChatID), "text": text,
		"from": map[string]any{"id": s.botID, "is_bot": true, "first_name": "fake", "username": s.botName},
	}, nil
}

func (s *Server) getFile(c *Call) (any, *apiError) {
	id := c.Fields["file_id"]
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		return nil, badRequest("invalid file_id")
	}
	return map[string]any{"file_id": id, "file_unique_id": f.uniqueID, "file_size": len(f.data), "file_path": f.path}, nil
}

func (s *Server) setWebhook(c *Call) (any, *apiError) {
	url := c.Fields["url"]
	if url == "" {
		return s.deleteWebhook(c)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
	}
	maxConn := 40
	if n, err := strconv.Atoi(c.Fields["max_connections"]); err == nil && n > 0 {
		maxConn = min(n, 100)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Fields["drop_pending_updates"] == "true" {
		s.dropPendingLocked()
	}
	s.hook.gen++
	s.hook.url, s.hook.secret, s.hook.maxConn = url, c.Fields["secret_token"], maxConn
	s.hook.busyChats = map[int64]bool{}
	s.hook.active = 0
	for i := range s.pending {
		s.pending[i].inflight = false
	}
	s.startPusherLocked(s.hook.gen)
	s.broadcastLocked()
	return true, nil
}

func (s *Server) deleteWebhook(c *Call) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Fields["drop_pending_updates"] == "true" {
		s.dropPendingLocked()
	}
	s.hook.gen++
	s.hook.url, s.hook.secret = "", ""
	for i := range s.pending {
		s.pending[i].inflight = false
	}
	s.broadcastLocked()
	return true, nil
}

func (s *Server) dropPendingLocked() {
	if n := len(s.pending); n > 0 {
		s.confirmed = max(s.confirmed, s.pending[n-1].id+1)
	}
	s.pending = nil
}

// getUpdates implements long polling with Telegram's offset semantics:
// updates below a positive offset are confirmed and forgotten; the call
// answers at once when updates at or above the offset exist, else waits up
// to timeout seconds for one, or until the request is cancelled. A newer
// getUpdates ends an older one with 409, as on Telegram.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, fields map[string]string) {
	offset, _ := strconv.ParseInt(fields["offset"], 10, 64)
	timeout, _ := strconv.Atoi(fields["timeout"])
	limit, err := strconv.Atoi(fields["limit"])
	if err != nil || limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()

	s.mu.Lock()
	if s.hook.url != "" {
		s.mu.Unlock()
		writeJSON(w, &apiError{code: 409, desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}, nil)
		return
	}
	s.pollGen++
	gen := s.pollGen
	if offset > 0 && offset > s.confirmed {
		s.confirmed = offset
		i := 0
		for i < len(s.pending) && s.pending[i].id < offset {
			i++
		}
		s.pending = append([]pending(nil), s.pending[i:]...)
	}
	s.broadcastLocked()
	s.mu.Unlock()

	for {
		s.mu.Lock()
		if s.pollGen != gen {
			s.pollConflicts++
			s.mu.Unlock()
			writeJSON(w, &apiError{code: 409, desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}, nil)
			return
		}
		var out []json.RawMessage
		for _, p := range s.pending {
			if p.id >= offset && len(out) < limit {
				out = append(out, p.body)
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if len(out) > 0 || timeout <= 0 {
			if out == nil {
				out = []json.RawMessage{}
			}
			writeJSON(w, nil, out)
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
}

// PollConflicts returns how many getUpdates calls were ended by a newer one
// with 409 Conflict: each is a moment when two pollers ran at once.
func (s *Server) PollConflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pollConflicts
}
