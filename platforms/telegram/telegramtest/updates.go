package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MsgOption shapes an injected user message.
type MsgOption func(*msgSpec)

type msgSpec struct {
	chatType  string
	forum     bool
	thread    int
	replyTo   int
	replyBot  bool
	mention   bool
	firstName string
	username  string
	isBot     bool
	caption   string
}

// InGroup makes the message come from a supergroup (chat ids of groups are
// negative on Telegram; pass one).
func InGroup() MsgOption { return func(m *msgSpec) { m.chatType = "supergroup" } }

// InTopic makes the message come from forum topic thread of a supergroup.
// Like Telegram, a message in a topic that replies to nothing carries the
// topic's creation message as reply_to_message.
func InTopic(thread int) MsgOption {
	return func(m *msgSpec) { m.chatType, m.forum, m.thread = "supergroup", true, thread }
}

// ReplyTo makes the message a reply to message id; fromBot says whether the
// bot wrote that message.
func ReplyTo(messageID int, fromBot bool) MsgOption {
	return func(m *msgSpec) { m.replyTo, m.replyBot = messageID, fromBot }
}

// Mention prefixes the text (or caption) with "@<bot username> ", with the
// mention entity Telegram would attach.
func Mention() MsgOption { return func(m *msgSpec) { m.mention = true } }

// From sets the sender's first name and username.
func From(firstName, username string) MsgOption {
	return func(m *msgSpec) { m.firstName, m.username = firstName, username }
}

// FromBot marks the sender as a bot.
func FromBot() MsgOption { return func(m *msgSpec) { m.isBot = true } }

// WithCaption sets the caption of a voice, audio, document or photo.
func WithCaption(text string) MsgOption { return func(m *msgSpec) { m.caption = text } }

// SendText injects a text message from userID in chatID and returns its
// update id. Commands and @mentions get the entities Telegram would attach.
func (s *Server) SendText(chatID, userID int64, text string, opts ...MsgOption) int64 {
	return s.inject(chatID, userID, opts, func(m map[string]any, spec *msgSpec) {
		text = s.withMention(spec, text)
		m["text"] = text
		if ents := entities(text); len(ents) > 0 {
			m["entities"] = ents
		}
	})
}

// SendVoice injects a voice note (Ogg/Opus bytes, duration in seconds) and
// returns its update id. The bytes are served by getFile and the file URL.
func (s *Server) SendVoice(chatID, userID int64, ogg []byte, duration int, opts ...MsgOption) int64 {
	return s.inject(chatID, userID, opts, func(m map[string]any, spec *msgSpec) {
		id, uid := s.storeFile("voice", "oga", ogg)
		m["voice"] = map[string]any{"file_id": id, "file_unique_id": uid, "duration": duration, "mime_type": "audio/ogg", "file_size": len(ogg)}
		s.caption(m, spec)
	})
}

// SendAudio injects an audio file (music player) and returns its update id.
func (s *Server) SendAudio(chatID, userID int64, fileName, mimeType string, data []byte, duration int, opts ...MsgOption) int64 {
	return s.inject(chatID, userID, opts, func(m map[string]any, spec *msgSpec) {
		id, uid := s.storeFile("music", "mp3", data)
		m["audio"] = map[string]any{"file_id": id, "file_unique_id": uid, "duration": duration, "file_name": fileName, "mime_type": mimeType, "file_size": len(data)}
		s.caption(m, spec)
	})
}

// SendDocument injects a document and returns its update id.
func (s *Server) SendDocument(chatID, userID int64, fileName, mimeType string, data []byte, opts ...MsgOption) int64 {
	return s.inject(chatID, userID, opts, func(m map[string]any, spec *msgSpec) {
		id, uid := s.storeFile("documents", "bin", data)
		m["document"] = map[string]any{"file_id": id, "file_unique_id": uid, "file_name": fileName, "mime_type": mimeType, "file_size": len(data)}
		s.caption(m, spec)
	})
}

// SendPhoto injects a photo (two sizes, the larger holding data) with an
// optional caption and returns its update id.
func (s *Server) SendPhoto(chatID, userID int64, data []byte, caption string, opts ...MsgOption) int64 {
	return s.inject(chatID, userID, append(opts[:len(opts):len(opts)], WithCaption(caption)), func(m map[string]any, spec *msgSpec) {
		small, smallU := s.storeFile("photos", "jpg", data[:min(len(data), 64)])
		big, bigU := s.storeFile("photos", "jpg", data)
		m["photo"] = []map[string]any{
			{"file_id": small, "file_unique_id": smallU, "width": 90, "height": 67, "file_size": min(len(data), 64)},
			{"file_id": big, "file_unique_id": bigU, "width": 1280, "height": 960, "file_size": len(data)},
		}
		s.caption(m, spec)
	})
}

// SendRawUpdate injects {"update_id": N, field: raw} verbatim — for updates
// the typed helpers cannot express, malformed ones included — and returns N.
func (s *Server) SendRawUpdate(field string, raw json.RawMessage) int64 {
	var probe struct {
		Chat struct {
			ID int64 `json:"id"`
		} `json:"chat"`
	}
	_ = json.Unmarshal(raw, &probe)
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpdate
	s.nextUpdate++
	body := fmt.Appendf(nil, `{"update_id":%d,%q:%s}`, id, field, raw)
	s.pending = append(s.pending, pending{id: id, chat: probe.Chat.ID, body: body})
	s.broadcastLocked()
	return id
}

func (s *Server) withMention(spec *msgSpec, text string) string {
	if spec.mention {
		return "@" + s.botName + " " + text
	}
	return text
}

func (s *Server) caption(m map[string]any, spec *msgSpec) {
	c := s.withMention(spec, spec.caption)
	if c == "" {
		return
	}
	m["caption"] = c
	if ents := entities(c); len(ents) > 0 {
		m["caption_entities"] = ents
	}
}

func (s *Server) storeFile(dir, ext string, data []byte) (id, uniqueID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFile++
	n := strconv.Itoa(s.nextFile)
	id, uniqueID = dir+"-"+n, "u"+dir+n
	s.files[id] = storedFile{uniqueID: uniqueID, path: dir + "/file_" + n + "." + ext, data: append([]byte(nil), data...)}
	return id, uniqueID
}

// inject builds a message from userID in chatID, lets fill add its content,
// and queues it as the next update.
func (s *Server) inject(chatID, userID int64, opts []MsgOption, fill func(map[string]any, *msgSpec)) int64 {
	spec := &msgSpec{chatType: "private", firstName: "User" + strconv.FormatInt(userID, 10)}
	for _, o := range opts {
		o(spec)
	}
	m := map[string]any{"date": time.Now().Unix()}
	fill(m, spec) // may store files: runs before s.mu is taken below

	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatTypes[chatID] = spec.chatType
	chat := s.chatJSON(chatID)
	if spec.forum {
		chat["is_forum"] = true
	}
	s.msgIDs[chatID]++
	m["message_id"] = s.msgIDs[chatID]
	m["chat"] = chat
	from := map[string]any{"id": userID, "is_bot": spec.isBot, "first_name": spec.firstName}
	if spec.username != "" {
		from["username"] = spec.username
	}
	m["from"] = from
	if spec.thread != 0 {
		m["message_thread_id"] = spec.thread
		m["is_topic_message"] = true
		m["reply_to_message"] = map[string]any{
			"message_id": spec.thread, "date": time.Now().Unix(), "chat": chat,
			"from":                map[string]any{"id": userID, "is_bot": false, "first_name": spec.firstName},
			"message_thread_id":   spec.thread,
			"forum_topic_created": map[string]any{"name": "topic " + strconv.Itoa(spec.thread), "icon_color": 7322096},
		}
	}
	if spec.replyTo != 0 {
		replied := map[string]any{"message_id": spec.replyTo, "date": time.Now().Unix(), "chat": chat, "text": "earlier message"}
		if spec.replyBot {
			replied["from"] = map[string]any{"id": s.botID, "is_bot": true, "first_name": "fake", "username": s.botName}
		} else {
			replied["from"] = map[string]any{"id": userID + 1, "is_bot": false, "first_name": "Someone"}
		}
		if spec.thread != 0 {
			replied["message_thread_id"] = spec.thread
		}
		m["reply_to_message"] = replied
	}
	id := s.nextUpdate
	s.nextUpdate++
	body, err := json.Marshal(map[string]any{"update_id": id, "message": m})
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode update: %v", err)) // maps of plain values always encode
	}
	s.pending = append(s.pending, pending{id: id, chat: chatID, body: body})
	s.broadcastLocked()
	return id
}

// entities finds the bot_command at the start of text and every @mention,
// with UTF-16 offsets, as Telegram reports them.
func entities(text string) []map[string]any {
	var out []map[string]any
	word := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if strings.HasPrefix(text, "/") {
		end := 1
		for end < len(text) && (word(text[end]) || text[end] == '@') {
			end++
		}
		if end > 1 {
			out = append(out, map[string]any{"type": "bot_command", "offset": 0, "length": utf16Len(text[:end])})
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || i > 0 && (word(text[i-1]) || text[i-1] == '/') {
			continue
		}
		end := i + 1
		for end < len(text) && word(text[end]) {
			end++
		}
		if end-i > 1 && !(strings.HasPrefix(text, "/") && i < len(strings.Fields(text)[0])) {
			out = append(out, map[string]any{"type": "mention", "offset": utf16Len(text[:i]), "length": utf16Len(text[i:end])})
		}
		i = end - 1
	}
	return out
}

// Pending reports how many updates Telegram still holds: not yet confirmed
// by a getUpdates offset, or not yet accepted by the webhook.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// WaitConfirmed blocks until update id was confirmed (a getUpdates offset
// passed it, or the webhook accepted it) or ctx ends.
func (s *Server) WaitConfirmed(ctx context.Context, id int64) error {
	for {
		s.mu.Lock()
		done := s.confirmed > id
		if !done {
			done = true
			for _, p := range s.pending {
				if p.id == id {
					done = false
				}
			}
			done = done && id < s.nextUpdate
		}
		ch := s.changed
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("telegramtest: waiting for update %d to be confirmed: %w", id, ctx.Err())
		}
	}
}

// Webhook returns the webhook URL and secret set by setWebhook, or "".
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hook.url, s.hook.secret
}
