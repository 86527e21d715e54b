package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// How a delivery was shown, as DeliveryReceipt.shown_as says it.
const (
	shownText  = "text"
	shownVoice = "voice"
	shownAudio = "audio"
	shownFile  = "file"
)

// voiceRefusalMemory is how long a chat that refused a voice note
// (VOICE_MESSAGES_FORBIDDEN) gets audio files without trying voice first.
const voiceRefusalMemory = time.Hour

// errEmpty is returned for a delivery with nothing to show.
var errEmpty = errors.New("nothing to send: the delivery has no text")

// target is where a session's messages go.
type target struct {
	key    string
	chat   int64
	thread int
}

func targetOf(s messages.Session) (target, error) {
	if !s.Valid() || s.Platform() != messages.Telegram {
		return target{}, fmt.Errorf("telegram: %w: %q is not a Telegram conversation", messages.ErrInvalidSession, s.Key())
	}
	chat, err := strconv.ParseInt(s.ChatID(), 10, 64)
	if err != nil || chat == 0 {
		return target{}, fmt.Errorf("telegram: %w: chat id %q", messages.ErrInvalidSession, s.ChatID())
	}
	t := target{key: s.Key(), chat: chat}
	if s.Kind() == messages.Topic {
		if t.thread, err = strconv.Atoi(s.ThreadID()); err != nil {
			return target{}, fmt.Errorf("telegram: %w: topic id %q", messages.ErrInvalidSession, s.ThreadID())
		}
	}
	return t, nil
}

// Send delivers d into the conversation s: text as one or more HTML messages,
// a voice delivery as a voice note (or audio file, file, text when the chat
// refuses voice). Deliveries to one chat go out one after another, paced; a
// slow or blocked chat delays no other. On failure the receipt lists what was
// already sent.
func (a *Adapter) Send(ctx context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	t, err := targetOf(s)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("telegram: deliver to %s: nil delivery", t.key)
	}
	replyTo, _ := strconv.Atoi(d.GetReplyToId())
	slot, err := a.out.acquire(ctx, t.chat)
	if err != nil {
		return nil, fmt.Errorf("telegram: deliver to %s: waiting for the chat: %w", t.key, err)
	}
	defer a.out.release(slot)

	rec := &messages.DeliveryReceipt{Seq: d.GetSeq()}
	if d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE {
		rec.ShownAs, err = a.sendVoice(ctx, slot, t, d, replyTo, rec)
	} else if done, ferr := a.finishDraft(ctx, slot, t, d, rec); done {
		rec.ShownAs, err = shownText, ferr
	} else {
		rec.ShownAs = shownText
		err = a.sendText(ctx, slot, t, d.GetText(), replyTo, true, rec)
	}
	if err != nil {
		rec.Error = err.Error()
		a.noteError(err)
		a.log.Warn("telegram delivery failed", "session", t.key, "seq", d.GetSeq(), "sent", len(rec.MessageIds), "err", err)
		return rec, fmt.Errorf("telegram: deliver to %s: %w", t.key, err)
	}
	a.log.Debug("telegram delivery sent", "session", t.key, "seq", d.GetSeq(), "shown_as", rec.ShownAs, "messages", len(rec.MessageIds))
	return rec, nil
}

// notify sends a short plain-text notice (a refusal, an error) in reply to
// message replyTo of session s.
func (a *Adapter) notify(ctx context.Context, s messages.Session, replyTo int, text string) error {
	t, err := targetOf(s)
	if err != nil {
		return err
	}
	slot, err := a.out.acquire(ctx, t.chat)
	if err != nil {
		return err
	}
	defer a.out.release(slot)
	return a.sendText(ctx, slot, t, text, replyTo, false, &messages.DeliveryReceipt{})
}

func replyParams(id int) *models.ReplyParameters {
	if id <= 0 {
		return nil
	}
	return &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
}

// sendText sends text in chunks of at most TextLimit UTF-16 units, the first
// replying to replyTo. Markdown becomes HTML; a chunk Telegram refuses to
// parse goes again as plain text.
func (a *Adapter) sendText(ctx context.Context, slot *chatSlot, t target, text string, replyTo int, markdown bool, rec *messages.DeliveryReceipt) error {
	var spans []span
	if markdown {
		spans = parseMarkdown(text)
	} else {
		spans = []span{{text: strings.ToValidUTF8(text, "\uFFFD")}}
	}
	chunks := chunkSpans(spans, TextLimit)
	if len(chunks) == 0 {
		return errEmpty
	}
	for i, c := range chunks {
		rp := replyParams(replyTo)
		if i > 0 {
			rp = nil
		}
		var id int
		var err error
		if markdown {
			id, err = a.sendMessage(ctx, slot, t, renderHTML(c), models.ParseModeHTML, rp)
			if err != nil && isEntityError(err) {
				a.log.Warn("telegram refused the HTML; sending plain text", "session", t.key, "err", err)
				id, err = a.sendMessage(ctx, slot, t, plainText(c), "", rp)
			}
		} else {
			id, err = a.sendMessage(ctx, slot, t, plainText(c), "", rp)
		}
		if err != nil {
			return fmt.Errorf("part %d of %d: %w", i+1, len(chunks), err)
		}
		rec.MessageIds = append(rec.MessageIds, strconv.Itoa(id))
	}
	return nil
}

func (a *Adapter) sendMessage(ctx context.Context, slot *chatSlot, t target, text string, mode models.ParseMode, rp *models.ReplyParameters) (int, error) {
	var msg *models.Message
	err := a.attempt(ctx, slot, t.key, "sendMessage", func(ctx context.Context) error {
		var err error
		msg, err = a.bot.SendMessage(ctx, &bot.SendMessageParams{
			ChatID: t.chat, MessageThreadID: t.thread, Text: text, ParseMode: mode, ReplyParameters: rp,
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return msg.ID, nil
}

// sendVoice delivers speech. Only bytes that really are Ogg/Opus become a
// voice note, and only up to MaxVoiceBytes; MP3 goes as an audio file. When
// Telegram refuses (VOICE_MESSAGES_FORBIDDEN, a size limit, any 400) it falls
// back voice → audio → file → text. The text rides as the caption when it
// fits in CaptionLimit, else follows as messages of its own.
func (a *Adapter) sendVoice(ctx context.Context, slot *chatSlot, t target, d *messages.Delivery, replyTo int, rec *messages.DeliveryReceipt) (string, error) {
	audio := d.GetAudio()
	kind := sniffAudio(audio)
	if claimed := d.GetFormat(); claimed != "" && claimed != kind {
		a.log.Warn("telegram voice delivery: bytes do not match the claimed format", "session", t.key, "claimed", claimed, "sniffed", kind, "bytes", len(audio))
	}
	text := d.GetText()
	spans := parseMarkdown(text)
	units := utf16Len(plainText(spans))
	var caption []span
	if units > 0 && units <= CaptionLimit {
		caption = spans
	}
	secs := d.GetDurationSecs()
	if secs <= 0 && kind == "ogg/opus" {
		secs = oggOpusSeconds(audio)
	}

	var ways []string
	switch kind {
	case "ogg/opus":
		if len(audio) <= MaxVoiceBytes && !a.out.voiceRefused(t.chat) {
			ways = append(ways, shownVoice)
		}
		ways = append(ways, shownAudio, shownFile)
	case "mp3":
		ways = append(ways, shownAudio, shownFile)
	default:
		a.log.Error("telegram voice delivery is not Ogg/Opus or MP3; sending its text", "session", t.key, "claimed", d.GetFormat(), "bytes", len(audio))
	}

	var lastErr error
	for _, way := range ways {
		id, err := a.sendMedia(ctx, slot, t, way, audio, kind, ceilSeconds(secs), caption, replyTo)
		if err == nil {
			rec.MessageIds = append(rec.MessageIds, strconv.Itoa(id))
			if caption == nil && units > 0 {
				if err := a.sendText(ctx, slot, t, text, 0, true, rec); err != nil {
					return way, fmt.Errorf("text after the %s: %w", way, err)
				}
			}
			return way, nil
		}
		if !canFallBack(ctx, err) {
			return way, err
		}
		if way == shownVoice && isVoiceForbidden(err) {
			a.out.refuseVoice(t.chat)
		}
		a.log.Warn("telegram refused the "+way+"; falling back", "session", t.key, "err", err)
		lastErr = err
	}
	if units == 0 {
		if lastErr == nil {
			lastErr = errors.New("audio is neither Ogg/Opus nor MP3")
		}
		return shownText, fmt.Errorf("could not send the audio and there is no text to send instead: %w", lastErr)
	}
	return shownText, a.sendText(ctx, slot, t, text, replyTo, true, rec)
}

// canFallBack reports a refusal of this particular message (a 400, a size
// limit), after which another form may still go through. A block, a timeout,
// exhausted retries or a cancelled context end the delivery instead.
func canFallBack(ctx context.Context, err error) bool {
	if kind, _ := classify(ctx, err); kind == failBadRequest {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "too large") || strings.Contains(s, "too big") || strings.Contains(s, " 413")
}

// sendMedia sends audio one way (voice, audio or file) with an optional
// caption, retrying the caption as plain text if Telegram rejects its HTML.
func (a *Adapter) sendMedia(ctx context.Context, slot *chatSlot, t target, way string, data []byte, kind string, duration int, caption []span, replyTo int) (int, error) {
	name := "reply.ogg"
	if kind == "mp3" {
		name = "reply.mp3"
	}
	method := map[string]string{shownVoice: "sendVoice", shownAudio: "sendAudio", shownFile: "sendDocument"}[way]
	send := func(captionText string, mode models.ParseMode) (int, error) {
		var msg *models.Message
		err := a.attempt(ctx, slot, t.key, method, func(ctx context.Context) error {
			file := &models.InputFileUpload{Filename: name, Data: bytes.NewReader(data)}
			rp := replyParams(replyTo)
			var err error
			switch way {
			case shownVoice:
				msg, err = a.bot.SendVoice(ctx, &bot.SendVoiceParams{ChatID: t.chat, MessageThreadID: t.thread, Voice: file,
					Duration: duration, Caption: captionText, ParseMode: mode, ReplyParameters: rp})
			case shownAudio:
				msg, err = a.bot.SendAudio(ctx, &bot.SendAudioParams{ChatID: t.chat, MessageThreadID: t.thread, Audio: file,
					Duration: duration, Title: "Voice reply", Caption: captionText, ParseMode: mode, ReplyParameters: rp})
			default:
				msg, err = a.bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: t.chat, MessageThreadID: t.thread, Document: file,
					Caption: captionText, ParseMode: mode, ReplyParameters: rp})
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		return msg.ID, nil
	}
	if len(caption) == 0 {
		return send("", "")
	}
	id, err := send(renderHTML(caption), models.ParseModeHTML)
	if err != nil && isEntityError(err) {
		a.log.Warn("telegram refused the caption HTML; sending it plain", "session", t.key, "err", err)
		id, err = send(plainText(caption), "")
	}
	return id, err
}

// Indicate shows a chat action ("typing…", "recording voice…") in the
// conversation s. It expires after about five seconds; the session refreshes
// it. Not paced and not retried: a late indicator is worthless.
func (a *Adapter) Indicate(ctx context.Context, s messages.Session, act platforms.ChatAction) error {
	t, err := targetOf(s)
	if err != nil {
		return err
	}
	var action models.ChatAction
	switch act {
	case platforms.Typing:
		action = models.ChatActionTyping
	case platforms.RecordVoice:
		action = models.ChatActionRecordVoice
	default:
		return fmt.Errorf("telegram: indicate in %s: unknown chat action %q", t.key, act)
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if _, err := a.bot.SendChatAction(cctx, &bot.SendChatActionParams{ChatID: t.chat, MessageThreadID: t.thread, Action: action}); err != nil {
		return fmt.Errorf("telegram: indicate %s in %s: %w", act, t.key, err)
	}
	return nil
}
