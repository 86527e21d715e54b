package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// onMessageCreate runs on discordgo's gateway reader (SyncEvents), in gateway
// order. It drops what is never for the bot and queues the rest by channel;
// it must not block, or heartbeat ACKs would go unread.
func (a *Adapter) onMessageCreate(_ *discordgo.Session, e *discordgo.MessageCreate) {
	m := e.Message
	if m == nil || m.Author == nil {
		return
	}
	rs := a.run.Load()
	if rs == nil {
		return
	}
	if m.Author.ID == a.self() || m.Author.Bot && !a.cfg.AllowBots {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return // joins, pins, thread-created notices
	}
	if !rs.queue.Push(m.ChannelID, m) {
		a.log.Warn("channel backlog full or shutting down; message dropped",
			"channel", m.ChannelID, "message_id", m.ID)
	}
}

// handleMessage takes one message of a channel, in order: decide whether it
// is for the bot, map it to its session, drop replays, ask the gate, build
// the UserMessage (transcribing voice) and hand it to in.
func (a *Adapter) handleMessage(ctx context.Context, in platforms.Inbound, m *discordgo.Message) {
	log := a.log.With("channel", m.ChannelID, "message_id", m.ID)
	direct := m.GuildID == ""
	var info channelInfo
	if !direct {
		var err error
		if info, err = a.channelInfo(ctx, m.ChannelID); err != nil {
			if ctx.Err() == nil {
				log.Error("look up channel; message not handled", "err", err)
			}
			return
		}
	}
	text, mentioned := a.stripMentions(m)
	if !direct && !a.addressed(m, info, mentioned) {
		return
	}
	s, err := a.sessionFor(m, info)
	if err != nil {
		log.Error("map message to session", "err", err)
		return
	}
	log = log.With("session", s.Key())

	first, err := a.dedup.MarkSeen(ctx, messages.Discord, m.ID)
	switch {
	case err != nil && ctx.Err() != nil:
		return
	case err != nil:
		// Answering twice is the lesser evil than losing the message.
		log.Warn("dedup store failed; handling message anyway", "err", err)
	case !first:
		log.Info("duplicate message ignored (gateway replay)")
		return
	}

	name := displayName(m)
	if ok, reply := a.gate.Admit(ctx, messages.Discord, m.Author.ID, name, direct); !ok {
		log.Info("user not admitted", "user", m.Author.ID)
		if reply != "" {
			a.notify(ctx, log, m.ChannelID, reply, m.ID)
		}
		return
	}

	if a.cfg.AutoThread && !direct && !info.thread && !a.noThread[m.ChannelID] {
		if ts, err := a.startThread(ctx, log, m, text); err != nil {
			log.Warn("auto-thread failed; answering in the channel", "err", err)
		} else {
			s = ts
			log = log.With("session", s.Key())
		}
	}

	um := &messages.UserMessage{
		SessionKey:     s.Key(),
		MessageId:      m.ID,
		SenderId:       m.Author.ID,
		SenderName:     name,
		Text:           text,
		ReceivedUnixMs: receivedAt(m).UnixMilli(),
	}
	if m.MessageReference != nil {
		um.ReplyToId = m.MessageReference.MessageID
	}
	if notice := a.describeAttachments(ctx, log, m, um); notice != "" && strings.TrimSpace(um.Text) == "" {
		// A voice message that could not be heard: say what went wrong
		// (not "transcription is not configured", which it is).
		a.notify(ctx, log, replyChannel(s), notice, m.ID)
		return
	}
	if err := a.ingestAttachments(ctx, log, m, um); err != nil {
		return // the adapter is stopping
	}

	if err := in(ctx, um); err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Warn("inbound refused message", "err", err)
		a.notify(ctx, log, replyChannel(s), err.Error(), m.ID)
		return
	}
	log.Debug("message accepted", "from_voice", um.FromVoice, "attachments", len(um.Attachments))
}

// stripMentions removes the bot's own mention from the content and spells
// other user mentions as @name, so the model reads what a human would. It
// reports whether the bot was mentioned.
func (a *Adapter) stripMentions(m *discordgo.Message) (string, bool) {
	bot := a.self()
	text := m.Content
	mentioned := false
	if bot != "" {
		for _, tag := range []string{"<@" + bot + ">", "<@!" + bot + ">"} {
			if strings.Contains(text, tag) {
				mentioned = true
				text = strings.ReplaceAll(text, tag, "")
			}
		}
	}
	for _, u := range m.Mentions {
		if u == nil {
			continue
		}
		if u.ID == bot {
			mentioned = true
			continue
		}
		r := strings.NewReplacer("<@"+u.ID+">", "@"+u.Username, "<@!"+u.ID+">", "@"+u.Username)
		text = r.Replace(text)
	}
	return strings.TrimSpace(text), mentioned
}

// addressed decides whether a guild message is for the bot: a mention, a
// reply to the bot, a free-response channel (or a thread under one), a
// thread the bot started, or mentions not required at all.
func (a *Adapter) addressed(m *discordgo.Message, info channelInfo, mentioned bool) bool {
	bot := a.self()
	switch {
	case mentioned, !a.requireMention:
		return true
	case a.free[m.ChannelID], info.thread && a.free[info.parentID]:
		return true
	case info.thread && info.ownerID != "" && info.ownerID == bot:
		return true
	case m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == bot:
		return true
	}
	return false
}

// sessionFor maps a message to its session by hermesd's key rules: a DM is
// discord:dm:<channel>; a thread discord:thread:<parent>:<thread>, shared;
// a guild channel discord:group:<channel>:u<user>, or shared when
// configured.
func (a *Adapter) sessionFor(m *discordgo.Message, info channelInfo) (messages.Session, error) {
	switch {
	case m.GuildID == "":
		return messages.NewSession(messages.Discord, messages.DM, m.ChannelID, "", "")
	case info.thread:
		return messages.NewSession(messages.Discord, messages.Thread, info.parentID, m.ChannelID, "")
	case a.cfg.SharedChannelSessions:
		return messages.NewSession(messages.Discord, messages.Group, m.ChannelID, "", "")
	default:
		return messages.NewSession(messages.Discord, messages.Group, m.ChannelID, "", m.Author.ID)
	}
}

// replyChannel is the Discord channel a session's replies are posted in:
// the thread for a thread session, the chat otherwise.
func replyChannel(s messages.Session) string {
	if s.Kind() == messages.Thread {
		return s.ThreadID()
	}
	return s.ChatID()
}

// startThread starts a thread from m and returns the thread's session.
func (a *Adapter) startThread(ctx context.Context, log *slog.Logger, m *discordgo.Message, text string) (messages.Session, error) {
	name := threadName(text, displayName(m))
	body, err := json.Marshal(map[string]any{"name": name, "auto_archive_duration": 1440})
	if err != nil {
		return messages.Session{}, fmt.Errorf("discord: start thread: %w", err)
	}
	raw, err := a.do(ctx, request{
		op: "start thread", method: http.MethodPost,
		url:         discordgo.EndpointChannelMessageThread(m.ChannelID, m.ID),
		contentType: "application/json", body: body, log: log,
	})
	if err != nil {
		return messages.Session{}, err
	}
	var c discordgo.Channel
	if err := discordgo.Unmarshal(raw, &c); err != nil || c.ID == "" {
		return messages.Session{}, fmt.Errorf("discord: start thread: bad answer %.200q", raw)
	}
	a.chans.put(c.ID, channelInfo{thread: true, parentID: m.ChannelID, ownerID: a.self()})
	return messages.NewSession(messages.Discord, messages.Thread, m.ChannelID, c.ID, "")
}

// threadName is the first line of the message, cut to a title's length.
func threadName(text, user string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:80]) + "…"
	}
	if line == "" {
		line = "Chat with " + user
	}
	return line
}

// describeAttachments lists m's attachments on um and, for a voice message
// with a transcriber, downloads and transcribes it: um.Text becomes the
// transcript and FromVoice true. Without a transcriber, or when it fails,
// the voice attachment is described and the text stays as typed.
// What the user is told when their voice message could not be transcribed.
const (
	noticeVoiceTooLarge  = "That voice message is too large for me to transcribe."
	noticeVoiceDownload  = "Sorry, I couldn't download that voice message. Please try again."
	noticeVoiceTranslate = "Sorry, I couldn't transcribe that voice message. Please try again, or send it as text."
	noticeVoiceEmpty     = "I couldn't hear any words in that voice message."
)

// describeAttachments lists m's attachments on um and transcribes a voice
// message into um.Text. It returns what to tell the user when transcription
// was attempted and failed, or "".
func (a *Adapter) describeAttachments(ctx context.Context, log *slog.Logger, m *discordgo.Message, um *messages.UserMessage) string {
	voice := m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0
	var voiceAtt *discordgo.MessageAttachment
	for _, att := range m.Attachments {
		if att == nil {
			continue
		}
		kind := attachmentKind(att)
		if voice && voiceAtt == nil && (kind == "audio" || strings.HasSuffix(att.Filename, ".ogg")) {
			kind, voiceAtt = "voice", att
		}
		um.Attachments = append(um.Attachments, &messages.Attachment{
			Kind: kind, Name: att.Filename, MimeType: att.ContentType,
			Size: int64(att.Size), DurationSecs: att.DurationSecs,
		})
	}
	if voiceAtt == nil || a.stt == nil {
		return ""
	}
	if int64(voiceAtt.Size) > a.cfg.MaxInboundBytes {
		log.Warn("voice message too large to transcribe", "bytes", voiceAtt.Size, "limit", a.cfg.MaxInboundBytes)
		return noticeVoiceTooLarge
	}
	audio, err := a.download(ctx, voiceAtt.URL, a.cfg.MaxInboundBytes)
	if err != nil {
		log.Warn("download voice message", "err", err)
		return noticeVoiceDownload
	}
	transcript, err := a.stt.Transcribe(ctx, audio, voiceAtt.Filename)
	if err != nil {
		log.Warn("transcribe voice message", "err", err)
		return noticeVoiceTranslate
	}
	transcript = strings.TrimSpace(transcript)
	if transcript == "" {
		log.Info("voice message transcribed to nothing")
		return noticeVoiceEmpty
	}
	if um.Text != "" {
		um.Text += "\n"
	}
	um.Text += transcript
	um.FromVoice = true
	return ""
}

// attachmentKind names an attachment for the model: photo, audio or document.
func attachmentKind(att *discordgo.MessageAttachment) string {
	switch ct := att.ContentType; {
	case strings.HasPrefix(ct, "image/"):
		return "photo"
	case strings.HasPrefix(ct, "audio/"):
		return "audio"
	}
	return "document"
}

// errTooLarge is returned by download for a file over its limit.
var errTooLarge = errors.New("attachment over the size limit")

// notify posts a short text (a gate's answer, an Inbound refusal) as a reply
// to the message it concerns. Failures are only logged: the user's message
// was already handled as far as it can be.
func (a *Adapter) notify(ctx context.Context, log *slog.Logger, channel, text, replyTo string) {
	if _, err := a.sendText(ctx, log, channel, text, replyTo); err != nil && ctx.Err() == nil {
		log.Warn("post notice", "err", err)
	}
}

// displayName is what the bot calls the author: guild nickname, global
// display name or user name.
func displayName(m *discordgo.Message) string {
	if m.Member != nil && m.Member.Nick != "" {
		return m.Member.Nick
	}
	if m.Author.GlobalName != "" {
		return m.Author.GlobalName
	}
	return m.Author.Username
}

// receivedAt is the message's Discord timestamp, or now when it has none.
func receivedAt(m *discordgo.Message) time.Time {
	if m.Timestamp.IsZero() {
		return time.Now()
	}
	return m.Timestamp
}
