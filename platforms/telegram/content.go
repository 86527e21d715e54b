package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/retry"
)

// build turns the parts into a UserMessage. A non-empty notice is for the
// user instead (a voice note too large, a failed transcription); a nil
// message with no notice means there is nothing to hand on. err is only the
// context's.
func (p *pipeline) build(ctx context.Context, parts []*update, log *slog.Logger) (*messages.UserMessage, string, error) {
	a := p.a
	first := parts[0]
	m := first.msg
	private := m.Chat.Type == models.ChatTypePrivate
	um := &messages.UserMessage{
		SessionKey:     first.sess.Key(),
		MessageId:      strconv.Itoa(m.ID),
		SenderId:       strconv.FormatInt(m.From.ID, 10),
		SenderName:     senderName(m.From),
		ReplyToId:      replyToID(m),
		ReceivedUnixMs: first.recv.UnixMilli(),
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	text = cleanText(text, !private, a.me.Load())
	for _, part := range parts[1:] {
		text = joinSplit(text, part.msg.Text)
	}
	um.Text = text

	switch {
	case m.Voice != nil:
		v := m.Voice
		um.Attachments = append(um.Attachments, &messages.Attachment{Kind: "voice", Name: "voice.ogg",
			MimeType: orDefault(v.MimeType, "audio/ogg"), Size: v.FileSize, DurationSecs: float64(v.Duration)})
		if a.stt == nil {
			break // hermesd tells the user that transcription is not configured
		}
		transcript, notice, err := p.transcribe(ctx, v, log)
		if err != nil || notice != "" {
			return nil, notice, err
		}
		um.Text = strings.TrimSpace(strings.Join([]string{transcript, text}, "\n\n"))
		um.FromVoice = true
	case m.Audio != nil:
		au := m.Audio
		um.Attachments = append(um.Attachments, &messages.Attachment{Kind: "audio", Name: orDefault(au.FileName, orDefault(au.Title, "audio")),
			MimeType: au.MimeType, Size: au.FileSize, DurationSecs: float64(au.Duration)})
	case m.Document != nil:
		d := m.Document
		att := &messages.Attachment{Kind: "document", Name: orDefault(d.FileName, "document"), MimeType: d.MimeType, Size: d.FileSize}
		um.Attachments = append(um.Attachments, att)
		if ing := a.deps.Media; ing != nil && media.Wants(att.Kind, att.Name, att.MimeType) {
			if err := p.ingest(ctx, ing, att, d.FileID, d.FileSize, log); err != nil {
				return nil, "", err
			}
		}
	case len(m.Photo) > 0:
		big := m.Photo[0]
		for _, ph := range m.Photo {
			if ph.Width*ph.Height > big.Width*big.Height {
				big = ph
			}
		}
		att := &messages.Attachment{Kind: "photo", Name: "photo.jpg", MimeType: "image/jpeg", Size: int64(big.FileSize)}
		um.Attachments = append(um.Attachments, att)
		if ing := a.deps.Media; ing != nil {
			// The largest size that fits the cap: Telegram keeps several.
			fit, ok := largestPhoto(m.Photo, ing.MaxBytes())
			if !ok {
				fit = big
			}
			if err := p.ingest(ctx, ing, att, fit.FileID, int64(fit.FileSize), log); err != nil {
				return nil, "", err
			}
		}
	case m.Video != nil:
		um.Attachments = append(um.Attachments, &messages.Attachment{Kind: "document", Name: orDefault(m.Video.FileName, "video.mp4"),
			MimeType: m.Video.MimeType, Size: m.Video.FileSize, DurationSecs: float64(m.Video.Duration)})
	case m.VideoNote != nil:
		um.Attachments = append(um.Attachments, &messages.Attachment{Kind: "document", Name: "video_note.mp4", MimeType: "video/mp4",
			Size: int64(m.VideoNote.FileSize), DurationSecs: float64(m.VideoNote.Duration)})
	}
	if um.Text == "" && len(um.Attachments) == 0 {
		log.Debug("telegram message has nothing hermesd can use (sticker, location, service message…)")
		return nil, "", nil
	}
	return um, "", nil
}

// transcribe downloads a voice note through the API URL and transcribes it.
func (p *pipeline) transcribe(ctx context.Context, v *models.Voice, log *slog.Logger) (string, string, error) {
	a := p.a
	limit := a.cfg.MaxInboundBytes
	tooLarge := func(size int64) string {
		log.Warn("telegram voice note over the size limit", "bytes", size, "limit", limit)
		return fmt.Sprintf(noticeVoiceTooLarge, float64(size)/(1<<20), float64(limit)/(1<<20))
	}
	if v.FileSize > limit {
		return "", tooLarge(v.FileSize), nil
	}
	var data []byte
	back := retry.NewBackoff(300*time.Millisecond, 3*time.Second)
	var err error
	for try := 0; try < 3; try++ {
		data, err = p.fetchFile(ctx, v.FileID, limit)
		if err == nil || errors.Is(err, errTooLarge) || ctx.Err() != nil {
			break
		}
		if kind, _ := classify(ctx, err); kind != failTransient && kind != failUncertain {
			break
		}
		if back.Wait(ctx) != nil {
			break
		}
	}
	switch {
	case ctx.Err() != nil:
		return "", "", ctx.Err()
	case errors.Is(err, errTooLarge):
		return "", tooLarge(limit + 1), nil
	case err != nil:
		a.noteError(err)
		log.Warn("telegram voice download failed", "err", err)
		return "", noticeVoiceDownload, nil
	}
	tctx, cancel := context.WithTimeout(ctx, transcribeTimeout)
	text, err := a.stt.Transcribe(tctx, data, "voice.ogg")
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		log.Warn("telegram voice transcription failed", "err", err)
		return "", noticeVoiceTranslate, nil
	}
	if strings.TrimSpace(text) == "" {
		return "", noticeVoiceTranslate, nil
	}
	return strings.TrimSpace(text), "", nil
}

// fetchFile resolves a file id with getFile and downloads it.
func (p *pipeline) fetchFile(ctx context.Context, fileID string, limit int64) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, p.a.cfg.RequestTimeout)
	f, err := p.a.bot.GetFile(cctx, &bot.GetFileParams{FileID: fileID})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("getFile: %w", err)
	}
	if f.FileSize > limit {
		return nil, fmt.Errorf("getFile: %d bytes: %w", f.FileSize, errTooLarge)
	}
	dctx, cancel := context.WithTimeout(ctx, p.a.cfg.RequestTimeout+time.Duration(limit/(256<<10))*time.Second)
	defer cancel()
	return p.a.api.download(dctx, f.FilePath, limit)
}

// addressed reports whether a group message is meant for the bot: it
// mentions @botname, replies to the bot, or is a command (for the bot, or
// for no bot in particular).
func addressed(m *models.Message, me *botAccount) bool {
	if me == nil {
		return false
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == me.id {
		return true
	}
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	if strings.HasPrefix(text, "/") {
		cmd := strings.Fields(text)[0]
		_, target, hasTarget := strings.Cut(cmd, "@")
		return !hasTarget || strings.EqualFold(target, me.username)
	}
	for _, e := range ents {
		if e.Type == models.MessageEntityTypeTextMention && e.User != nil && e.User.ID == me.id {
			return true
		}
	}
	return me.username != "" && findMention(text, me.username) >= 0
}

// findMention returns the byte offset of "@name" as a whole word in text, or -1.
func findMention(text, name string) int {
	n := len(name) + 1
	for i := strings.IndexByte(text, '@'); i >= 0 && i+n <= len(text); {
		if strings.EqualFold(text[i+1:i+n], name) && (i+n == len(text) || !isWordByte(text[i+n])) && (i == 0 || !isWordByte(text[i-1])) {
			return i
		}
		j := strings.IndexByte(text[i+1:], '@')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return -1
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// cleanText turns "/cmd@botname args" into "/cmd args" and, in groups,
// removes "@botname" mentions: the model sees what the user meant.
func cleanText(text string, group bool, me *botAccount) string {
	if me == nil || me.username == "" {
		return text
	}
	if strings.HasPrefix(text, "/") {
		end := strings.IndexAny(text, " \t\n")
		if end < 0 {
			end = len(text)
		}
		if cmd, target, ok := strings.Cut(text[:end], "@"); ok && strings.EqualFold(target, me.username) {
			text = cmd + text[end:]
		}
	}
	if !group {
		return text
	}
	for {
		i := findMention(text, me.username)
		if i < 0 {
			break
		}
		end := i + len(me.username) + 1
		if end < len(text) && text[end] == ' ' {
			end++
		}
		text = text[:i] + text[end:]
	}
	return strings.TrimSpace(text)
}

// joinSplit joins a split text with its continuation. Telegram trims the
// whitespace at the cut, so a line break stands in for it.
func joinSplit(a, b string) string {
	if a == "" || b == "" || strings.HasSuffix(a, "\n") || strings.HasPrefix(b, "\n") {
		return a + b
	}
	return a + "\n" + b
}

// replyToID is the id of the message m answers, or "". In a forum topic
// every message "replies" to the topic's first message; that is not a reply.
func replyToID(m *models.Message) string {
	r := m.ReplyToMessage
	if r == nil || r.ForumTopicCreated != nil || (m.IsTopicMessage && r.ID == m.MessageThreadID) {
		return ""
	}
	return strconv.Itoa(r.ID)
}

func senderName(u *models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return name
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
