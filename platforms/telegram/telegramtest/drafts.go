package telegramtest

import (
	"strconv"
	"strings"
)

// sendMessageDraft models Bot API 9.3's streamed draft: private chats only,
// a non-zero integer draft_id, 1-4096 characters of text. A draft is a
// transient preview, not a message: it gets no message id and SentTo does
// not list it; Drafts shows what was streamed.
func (s *Server) sendMessageDraft(c *Call) (any, *apiError) {
	if c.ChatID == 0 {
		return nil, badRequest("chat not found")
	}
	if c.ChatID < 0 || s.chatType(c.ChatID) != "private" {
		return nil, badRequest("draft can be sent only to private chats")
	}
	if id, err := strconv.ParseInt(c.Fields["draft_id"], 10, 64); err != nil || id == 0 {
		return nil, badRequest("invalid draft_id %q", c.Fields["draft_id"])
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
	return true, nil
}

// deleteMessage removes one of the bot's messages.
func (s *Server) deleteMessage(c *Call) (any, *apiError) {
	id, err := strconv.Atoi(c.Fields["message_id"])
	if c.ChatID == 0 || err != nil {
		return nil, badRequest("message to delete not found")
	}
	c.MessageID = id
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := msgRef{c.ChatID, id}
	if _, ok := s.texts[ref]; !ok {
		return nil, badRequest("message to delete not found")
	}
	delete(s.texts, ref)
	s.deleted[ref] = true
	return true, nil
}

func (s *Server) chatType(chat int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.chatTypes[chat]; t != "" {
		return t
	}
	if chat > 0 {
		return "private"
	}
	return "supergroup"
}

// Message returns the current text (as sent, with its markup) of the bot's
// text message id in chat, and whether it exists (sent and not deleted).
func (s *Server) Message(chat int64, id int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.texts[msgRef{chat, id}]
	return t, ok
}

// Visible returns what the user of chat sees now: the text of every text
// message the bot sent there and did not delete, in order, as displayed
// (HTML entities resolved).
func (s *Server) Visible(chat int64) []string {
	var out []string
	for _, c := range s.SentTo(chat) {
		if !strings.EqualFold(c.Method, "sendMessage") {
			continue
		}
		raw, ok := s.Message(chat, c.MessageID)
		if !ok {
			continue
		}
		mode := c.Fields["parse_mode"]
		// The current text may come from an edit with another parse mode.
		for _, e := range s.CallsTo("editMessageText") {
			if e.ChatID == chat && e.MessageID == c.MessageID && e.OK() {
				mode = e.Fields["parse_mode"]
			}
		}
		v, _ := visible(raw, mode)
		out = append(out, strings.TrimSpace(v))
	}
	return out
}

// Drafts returns the texts streamed to chat with sendMessageDraft, in order.
func (s *Server) Drafts(chat int64) []string {
	var out []string
	for _, c := range s.CallsTo("sendMessageDraft") {
		if c.ChatID == chat && c.OK() {
			out = append(out, c.Fields["text"])
		}
	}
	return out
}
