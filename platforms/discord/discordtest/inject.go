package discordtest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"
)

// Message is an inbound message a test injects as MESSAGE_CREATE.
type Message struct {
	// ID is the message id; "" picks a fresh one.
	ID        string
	ChannelID string
	// GuildID is empty for a DM.
	GuildID string
	// ThreadParent, when set, makes ChannelID a public thread under this
	// parent channel (registered for GET /channels/{id}).
	ThreadParent string
	AuthorID     string
	AuthorName   string
	// AuthorIsBot marks the author as a bot account.
	AuthorIsBot bool
	Content     string
	// MentionBot prefixes the content with the bot's mention and lists the
	// bot in "mentions", as Discord does for "@hermes hi".
	MentionBot bool
	// Flags are message flags; 8192 marks a voice message.
	Flags       int
	Attachments []Attachment
	// ReplyTo is the id of the message this one replies to, if any.
	ReplyTo string
	// ReplyToBot marks the replied-to message as the bot's own.
	ReplyToBot bool
}

// Attachment is a file on an injected message; its bytes are served from
// the fake's CDN.
type Attachment struct {
	Filename     string
	ContentType  string
	Data         []byte
	DurationSecs float64
	Waveform     string
}

// Inject registers m's channel, serves its attachments and dispatches it as
// MESSAGE_CREATE. It returns the message id.
func (s *Server) Inject(m Message) (string, error) {
	s.mu.Lock()
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	s.registerChannelLocked(m)
	atts := make([]map[string]any, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		id := s.newIDLocked()
		path := "attachments/" + m.ChannelID + "/" + id + "/" + url.PathEscape(a.Filename)
		s.cdn[path] = a.Data
		att := map[string]any{
			"id": id, "filename": a.Filename, "content_type": a.ContentType,
			"size": len(a.Data), "url": s.URL + "/cdn/" + path,
		}
		if a.DurationSecs != 0 || a.Waveform != "" {
			att["duration_secs"] = a.DurationSecs
			att["waveform"] = a.Waveform
		}
		atts = append(atts, att)
	}
	s.mu.Unlock()

	content := m.Content
	mentions := []any{}
	if m.MentionBot {
		content = "<@" + BotID + "> " + content
		mentions = append(mentions, botUser())
	}
	name := m.AuthorName
	if name == "" {
		name = "user" + m.AuthorID
	}
	d := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "content": content,
		"timestamp": time.Now().UTC().Format(time.RFC3339),
		"type":      0, "flags": m.Flags,
		"author":      map[string]any{"id": m.AuthorID, "username": name, "bot": m.AuthorIsBot},
		"attachments": atts, "mentions": mentions, "embeds": []any{},
	}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	if m.ReplyTo != "" {
		d["type"] = 19
		d["message_reference"] = map[string]any{"message_id": m.ReplyTo, "channel_id": m.ChannelID}
		if m.ReplyToBot {
			d["referenced_message"] = map[string]any{
				"id": m.ReplyTo, "channel_id": m.ChannelID, "content": "",
				"author": botUser(), "type": 0,
			}
		}
	}
	if err := s.Dispatch("MESSAGE_CREATE", d); err != nil {
		return "", err
	}
	return m.ID, nil
}

// registerChannelLocked records the channel an injected message lives in,
// unless the test registered it already. s.mu must be held.
func (s *Server) registerChannelLocked(m Message) {
	if _, ok := s.channels[m.ChannelID]; ok {
		return
	}
	switch {
	case m.GuildID == "":
		s.channels[m.ChannelID] = Channel{ID: m.ChannelID, Type: ChannelDM}
	case m.ThreadParent != "":
		if _, ok := s.channels[m.ThreadParent]; !ok {
			s.channels[m.ThreadParent] = Channel{ID: m.ThreadParent, Type: ChannelText, GuildID: m.GuildID}
		}
		s.channels[m.ChannelID] = Channel{ID: m.ChannelID, Type: ChannelPublicThread, GuildID: m.GuildID,
			ParentID: m.ThreadParent, OwnerID: m.AuthorID}
	default:
		s.channels[m.ChannelID] = Channel{ID: m.ChannelID, Type: ChannelText, GuildID: m.GuildID}
	}
}

// mustInject is Inject for the helpers below: a failure marks the test
// failed (tb.Errorf is safe from any goroutine) and returns "".
func (s *Server) mustInject(m Message) string {
	id, err := s.Inject(m)
	if err != nil {
		s.tb.Errorf("discordtest: inject: %v", err)
	}
	return id
}

// DM injects a direct message from user in DM channel and returns its id.
func (s *Server) DM(channel, user, text string) string {
	return s.mustInject(Message{ChannelID: channel, AuthorID: user, Content: text})
}

// GuildMessage injects a message from user in a guild channel, mentioning
// the bot or not, and returns its id.
func (s *Server) GuildMessage(guild, channel, user, text string, mention bool) string {
	return s.mustInject(Message{GuildID: guild, ChannelID: channel, AuthorID: user, Content: text, MentionBot: mention})
}

// ThreadMessage injects a message from user in thread (a public thread of
// parent) and returns its id.
func (s *Server) ThreadMessage(guild, parent, thread, user, text string, mention bool) string {
	return s.mustInject(Message{GuildID: guild, ChannelID: thread, ThreadParent: parent,
		AuthorID: user, Content: text, MentionBot: mention})
}

// VoiceMessage injects a Discord voice message (flag 8192, one
// voice-message.ogg attachment with duration and waveform) from user;
// guild "" makes it a DM. It returns the message id.
func (s *Server) VoiceMessage(guild, channel, user string, ogg []byte, durationSecs float64) string {
	return s.mustInject(Message{GuildID: guild, ChannelID: channel, AuthorID: user, Flags: voiceFlag,
		Attachments: []Attachment{{
			Filename: "voice-message.ogg", ContentType: "audio/ogg", Data: ogg,
			DurationSecs: durationSecs, Waveform: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{128}, 32)),
		}}})
}

// String describes m for test failure messages.
func (m Message) String() string {
	return fmt.Sprintf("message %s in %s from %s: %q", m.ID, m.ChannelID, m.AuthorID, m.Content)
}
