package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
)

// How a delivery was shown, for DeliveryReceipt.ShownAs.
const (
	shownText  = "text"
	shownVoice = "voice"
	shownAudio = "audio"
	shownFile  = "file"
)

// Send delivers d into the conversation s: text in chunks of at most 2000
// characters (the first one replying to d.ReplyToId), voice as a Discord
// voice message with fallbacks (voice.go). Deliveries to one channel go out
// one at a time, so two replies never interleave their chunks; other
// channels are not held up, not even by a rate-limited one. On failure the
// receipt lists what was sent before it, and the error says why.
func (a *Adapter) Send(ctx context.Context, s messages.Session, d *messages.Delivery) (*messages.DeliveryReceipt, error) {
	if d == nil {
		return nil, errors.New("discord: send: nil delivery")
	}
	ch, err := channelOf(s)
	if err != nil {
		return nil, fmt.Errorf("discord: send: %w", err)
	}
	log := a.log.With("session", s.Key(), "seq", d.GetSeq())
	if k := d.GetIdempotencyKey(); k != "" {
		ctx = context.WithValue(ctx, nonceKey{}, &nonces{key: k})
	}
	unlock, err := a.locks.lock(ctx, ch)
	if err != nil {
		return nil, fmt.Errorf("discord: send to %s: %w", s.Key(), err)
	}
	defer unlock()

	rec := &messages.DeliveryReceipt{Seq: d.GetSeq()}
	voice := d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_VOICE ||
		d.GetKind() == messages.DeliveryKind_DELIVERY_KIND_UNSPECIFIED && len(d.GetAudio()) > 0
	if voice {
		err = a.sendVoice(ctx, log, ch, d, rec)
	} else if done, ferr := a.finishDraft(ctx, log, s.Key(), ch, d, rec); done {
		rec.ShownAs, err = shownText, ferr
	} else {
		rec.ShownAs = shownText
		var ids []string
		ids, err = a.sendTextLocked(ctx, log, ch, d.GetText(), d.GetReplyToId())
		rec.MessageIds = append(rec.MessageIds, ids...)
		if err == nil && len(ids) == 0 {
			err = errors.New("discord: send: empty delivery (no text, no audio)")
		}
	}
	if err != nil {
		rec.Error = err.Error()
		log.Warn("delivery failed", "err", err, "sent", len(rec.MessageIds))
		return rec, err
	}
	log.Debug("delivered", "shown_as", rec.ShownAs, "messages", len(rec.MessageIds))
	return rec, nil
}

// Indicate shows "typing…" in the conversation's channel for about 10 s;
// Discord has no separate recording indicator, so RecordVoice types too.
// It is best effort: one try, no rate-limit wait.
func (a *Adapter) Indicate(ctx context.Context, s messages.Session, _ platforms.ChatAction) error {
	ch, err := channelOf(s)
	if err != nil {
		return fmt.Errorf("discord: indicate: %w", err)
	}
	_, err = a.do(ctx, request{op: "typing", method: http.MethodPost, url: discordgo.EndpointChannelTyping(ch),
		attempts: 1, log: a.log.With("session", s.Key())})
	return err
}

// channelOf returns the Discord channel a session's messages go to.
func channelOf(s messages.Session) (string, error) {
	if !s.Valid() {
		return "", messages.ErrInvalidSession
	}
	if s.Platform() != messages.Discord {
		return "", fmt.Errorf("%w: %s is not a Discord session", messages.ErrInvalidSession, s.Key())
	}
	return replyChannel(s), nil
}

// sendText posts text in chunks to channel, taking the channel's send lock.
func (a *Adapter) sendText(ctx context.Context, log *slog.Logger, channel, text, replyTo string) ([]string, error) {
	unlock, err := a.locks.lock(ctx, channel)
	if err != nil {
		return nil, fmt.Errorf("discord: send text: %w", err)
	}
	defer unlock()
	return a.sendTextLocked(ctx, log, channel, text, replyTo)
}

// sendTextLocked posts text in chunks; the first replies to replyTo. The
// caller holds the channel's send lock. It returns the ids of the messages
// sent, also on error.
func (a *Adapter) sendTextLocked(ctx context.Context, log *slog.Logger, channel, text, replyTo string) ([]string, error) {
	var ids []string
	for i, chunk := range chunkText(text, TextLimit) {
		p := messagePayload{Content: chunk, AllowedMentions: &noPings}
		if i == 0 {
			p.Reference = reference(channel, replyTo)
		}
		id, err := a.post(ctx, log, channel, p, nil)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// messagePayload is the JSON of a message post (discordgo.MessageSend has
// no attachments metadata, which voice messages need).
type messagePayload struct {
	// Nonce with EnforceNonce makes Discord return the message already
	// created with this nonce instead of posting it again: a retry after a
	// lost answer or a 5xx never shows the user a reply twice.
	Nonce           string              `json:"nonce,omitempty"`
	EnforceNonce    bool                `json:"enforce_nonce,omitempty"`
	Content         string              `json:"content,omitempty"`
	Flags           int                 `json:"flags,omitempty"`
	Reference       *messageReference   `json:"message_reference,omitempty"`
	Attachments     []attachmentPayload `json:"attachments,omitempty"`
	AllowedMentions *allowedMentions    `json:"allowed_mentions,omitempty"`
}

type messageReference struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id,omitempty"`
	// FailIfNotExists false: a reply to a since-deleted message still posts.
	FailIfNotExists bool `json:"fail_if_not_exists"`
}

type attachmentPayload struct {
	ID           string  `json:"id"`
	Filename     string  `json:"filename"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Waveform     string  `json:"waveform,omitempty"`
}

type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

// noPings lets model-written text mention nobody (no @everyone, no roles,
// no users); only the user replied to is notified.
var noPings = allowedMentions{Parse: []string{}, RepliedUser: true}

func reference(channel, replyTo string) *messageReference {
	if replyTo == "" {
		return nil
	}
	return &messageReference{MessageID: replyTo, ChannelID: channel}
}

// upload is one file of a multipart post.
type upload struct {
	name, contentType string
	data              []byte
}

// post creates one message in channel: JSON without files, multipart
// (payload_json + files[n]) with them. It returns the new message's id.
func (a *Adapter) post(ctx context.Context, log *slog.Logger, channel string, p messagePayload, files []upload) (string, error) {
	var (
		ct   = "application/json"
		body []byte
		err  error
	)
	// One nonce per message, the same across this call's retries and, for a
	// delivery with an idempotency key, across a restart that sends it again
	// (Discord accepts up to 25 characters; base 36 of 64 bits is at most 13).
	p.Nonce, p.EnforceNonce = nextNonce(ctx), true
	if len(files) == 0 {
		body, err = json.Marshal(p)
	} else {
		dgFiles := make([]*discordgo.File, len(files))
		for i, f := range files {
			dgFiles[i] = &discordgo.File{Name: f.name, ContentType: f.contentType, Reader: bytes.NewReader(f.data)}
		}
		ct, body, err = discordgo.MultipartBodyWithJSON(p, dgFiles)
	}
	if err != nil {
		return "", fmt.Errorf("discord: encode message: %w", err)
	}
	raw, err := a.do(ctx, request{op: "send message", method: http.MethodPost,
		url: discordgo.EndpointChannelMessages(channel), contentType: ct, body: body, log: log})
	if err != nil {
		return "", err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("discord: send message: answer without message id: %.200q", raw)
	}
	return m.ID, nil
}

// channelLocks serializes deliveries per channel, with waits that end with
// the caller's context.
type channelLocks struct {
	mu sync.Mutex
	m  map[string]*channelLock
}

type channelLock struct {
	sem  chan struct{}
	refs int
}

// lock takes key's lock and returns its release.
func (l *channelLocks) lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]*channelLock)
	}
	cl := l.m[key]
	if cl == nil {
		cl = &channelLock{sem: make(chan struct{}, 1)}
		l.m[key] = cl
	}
	cl.refs++
	l.mu.Unlock()

	release := func() {
		l.mu.Lock()
		if cl.refs--; cl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case cl.sem <- struct{}{}:
		return func() { <-cl.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// nonceKey carries a delivery's nonces through the posts of one Send.
type nonceKey struct{}

// nonces derives the nonce of each message one delivery posts, in order,
// from the delivery's idempotency key: the same delivery sent again after a
// restart posts the same nonces, and Discord returns the messages it already
// created (for the few minutes it remembers a nonce).
type nonces struct {
	key string
	n   int
}

func nextNonce(ctx context.Context) string {
	ns, ok := ctx.Value(nonceKey{}).(*nonces)
	if !ok {
		return strconv.FormatUint(rand.Uint64(), 36)
	}
	ns.n++
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", ns.key, ns.n)
	return strconv.FormatUint(h.Sum64(), 36)
}
