package discord_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
)

func voiceDelivery(audio []byte, text string) *messages.Delivery {
	return &messages.Delivery{
		Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Audio: audio, Format: "ogg/opus",
		DurationSecs: 2.5, Waveform: discordtest.Waveform(), Text: text, ReplyToId: "555", Seq: 7,
	}
}

func TestSend_VoiceMessage(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{})
	ogg := discordtest.OggOpus(2500 * time.Millisecond)

	rec, err := a.Send(t.Context(), dmSession("asker"), voiceDelivery(ogg, ""))
	if err != nil {
		t.Fatal(err)
	}
	attempts := srv.Attempts()
	if len(attempts) != 1 {
		t.Fatalf("%d requests, want exactly one", len(attempts))
	}
	p := attempts[0]
	if p.ChannelID != "asker" || p.Method != http.MethodPost || !p.Multipart {
		t.Errorf("request: %s %s multipart=%v", p.Method, p.ChannelID, p.Multipart)
	}
	if p.Flags != 8192 {
		t.Errorf("flags = %d, want 8192", p.Flags)
	}
	if p.Content != "" {
		t.Errorf("content = %q, want none on a voice message", p.Content)
	}
	if len(p.Files) != 1 || len(p.Attachments) != 1 {
		t.Fatalf("%d files, %d attachment entries; want one each", len(p.Files), len(p.Attachments))
	}
	f, meta := p.Files[0], p.Attachments[0]
	if f.Name != "voice-message.ogg" || f.ContentType != "audio/ogg" || meta.Filename != "voice-message.ogg" || meta.ID != "0" {
		t.Errorf("file %q (%s), attachment %+v", f.Name, f.ContentType, meta)
	}
	if !bytes.Equal(f.Data, ogg) || !bytes.HasPrefix(f.Data, []byte("OggS")) || !bytes.Contains(f.Data[:64], []byte("OpusHead")) {
		t.Error("uploaded bytes are not the Ogg/Opus stream")
	}
	if meta.DurationSecs != 2.5 {
		t.Errorf("duration_secs = %v, want 2.5", meta.DurationSecs)
	}
	wf, err := base64.StdEncoding.DecodeString(meta.Waveform)
	if err != nil || len(wf) != 256 || !bytes.Equal(wf, discordtest.Waveform()) {
		t.Errorf("waveform: %d values (err %v), want the delivery's 256", len(wf), err)
	}
	if p.Reference == nil || p.Reference.MessageID != "555" {
		t.Errorf("message_reference = %+v, want 555", p.Reference)
	}
	if rec.GetShownAs() != "voice" || len(rec.GetMessageIds()) != 1 || rec.GetMessageIds()[0] != p.MessageID || rec.GetSeq() != 7 {
		t.Errorf("receipt = %v", rec)
	}
}

func TestSend_VoiceWithTextSendsTextSeparately(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{})
	rec, err := a.Send(t.Context(), dmSession("c"), voiceDelivery(discordtest.OggOpus(time.Second), "Here is what I said."))
	if err != nil {
		t.Fatal(err)
	}
	posts := srv.Posts()
	if len(posts) != 2 || !posts[0].IsVoice() || posts[0].Content != "" || posts[1].IsVoice() || posts[1].Content != "Here is what I said." {
		t.Fatalf("posts = %+v; want a voice message, then the text", posts)
	}
	if rec.GetShownAs() != "voice" || len(rec.GetMessageIds()) != 2 {
		t.Errorf("receipt = %v", rec)
	}
}

func TestSend_VoiceFallbacks(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{})
	ogg := discordtest.OggOpus(time.Second)

	t.Run("VoiceForbiddenSendsAudioFile", func(t *testing.T) {
		srv.ForbidVoice("novoice")
		rec, err := a.Send(t.Context(), dmSession("novoice"), voiceDelivery(ogg, ""))
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("novoice")
		if len(posts) != 1 || posts[0].IsVoice() || len(posts[0].Files) != 1 || !bytes.Equal(posts[0].Files[0].Data, ogg) {
			t.Fatalf("posts = %+v, want one plain audio attachment", posts)
		}
		if posts[0].Files[0].ContentType != "audio/ogg" || posts[0].Reference == nil {
			t.Errorf("file %s, reference %+v", posts[0].Files[0].ContentType, posts[0].Reference)
		}
		if rec.GetShownAs() != "audio" {
			t.Errorf("shown_as = %q, want audio", rec.GetShownAs())
		}
	})

	t.Run("NoVoiceNoFilesSendsText", func(t *testing.T) {
		srv.ForbidVoice("textonly")
		srv.ForbidFiles("textonly")
		rec, err := a.Send(t.Context(), dmSession("textonly"), voiceDelivery(ogg, "The answer is 42."))
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("textonly")
		if len(posts) != 1 || posts[0].Content != "The answer is 42." || len(posts[0].Files) != 0 {
			t.Fatalf("posts = %+v, want the text alone", posts)
		}
		if rec.GetShownAs() != "text" {
			t.Errorf("shown_as = %q, want text", rec.GetShownAs())
		}
	})

	t.Run("MissingPermissionSendsAudioFile", func(t *testing.T) {
		srv.FailPosts("noperm", 1, discordtest.MissingPermissions())
		rec, err := a.Send(t.Context(), dmSession("noperm"), voiceDelivery(ogg, ""))
		if err != nil || rec.GetShownAs() != "audio" {
			t.Fatalf("shown_as %q, err %v; want audio", rec.GetShownAs(), err)
		}
	})

	t.Run("TooLargeTellsTheUser", func(t *testing.T) {
		srv.FailPosts("big", 1, discordtest.TooLarge())
		rec, err := a.Send(t.Context(), dmSession("big"), voiceDelivery(ogg, ""))
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("big")
		if len(posts) != 1 || !strings.Contains(posts[0].Content, "too large") {
			t.Fatalf("posts = %+v, want a notice", posts)
		}
		if rec.GetShownAs() != "text" {
			t.Errorf("shown_as = %q", rec.GetShownAs())
		}
	})

	t.Run("OverUploadLimitNeverUploaded", func(t *testing.T) {
		huge := append(bytes.Clone(ogg), make([]byte, discord.MaxVoiceBytes)...)
		before := len(srv.Attempts())
		rec, err := a.Send(t.Context(), dmSession("huge"), voiceDelivery(huge, "spoken text"))
		if err != nil || rec.GetShownAs() != "text" {
			t.Fatalf("shown_as %q, err %v", rec.GetShownAs(), err)
		}
		if n := len(srv.Attempts()) - before; n != 1 {
			t.Errorf("%d requests, want only the text", n)
		}
	})

	t.Run("MP3GoesAsAudioFile", func(t *testing.T) {
		mp3 := []byte("ID3\x04\x00\x00\x00\x00\x00\x00not really mp3 frames")
		d := &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Audio: mp3, Format: "mp3"}
		rec, err := a.Send(t.Context(), dmSession("mp3"), d)
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("mp3")
		if len(posts) != 1 || posts[0].IsVoice() || posts[0].Files[0].Name != "reply.mp3" || posts[0].Files[0].ContentType != "audio/mpeg" {
			t.Fatalf("posts = %+v", posts)
		}
		if rec.GetShownAs() != "audio" {
			t.Errorf("shown_as = %q", rec.GetShownAs())
		}
	})

	t.Run("NotOggNeverSentAsVoice", func(t *testing.T) {
		rec, err := a.Send(t.Context(), dmSession("fake-ogg"), voiceDelivery([]byte("RIFF....WAVEfmt "), ""))
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("fake-ogg")
		if len(posts) != 1 || posts[0].IsVoice() || len(posts[0].Files) != 1 {
			t.Fatalf("posts = %+v, want one plain file", posts)
		}
		if rec.GetShownAs() != "file" {
			t.Errorf("shown_as = %q, want file", rec.GetShownAs())
		}
	})
}

func TestSend_TextChunked(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{})
	text := "Here you go:\n```go\n" + strings.Repeat("x := compute(a, b) // and so on and so forth\n", 100) + "```\nDone."
	rec, err := a.Send(t.Context(), messages.MustSession(messages.Discord, messages.Thread, "p", "th", ""),
		&messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: text, ReplyToId: "9"})
	if err != nil {
		t.Fatal(err)
	}
	posts := srv.PostsTo("th")
	if len(posts) < 3 || len(rec.GetMessageIds()) != len(posts) || rec.GetShownAs() != "text" {
		t.Fatalf("%d posts, receipt %v", len(posts), rec)
	}
	for i, p := range posts {
		if n := utf8.RuneCountInString(p.Content); n > 2000 {
			t.Errorf("post %d: %d characters", i, n)
		}
		if n := strings.Count(p.Content, "```"); n%2 != 0 {
			t.Errorf("post %d breaks a code block (%d fences)", i, n)
		}
		if (p.Reference != nil) != (i == 0) {
			t.Errorf("post %d reference = %+v; only the first replies", i, p.Reference)
		}
		if i > 0 && i < len(posts)-1 && !strings.HasPrefix(p.Content, "```go\n") {
			t.Errorf("post %d does not reopen the go block", i)
		}
	}
}

func TestSend_RateLimitedChannelDoesNotBlockOthers(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{})
	const wait = time.Second
	srv.FailPosts("slow", 1, discordtest.RateLimited(wait))

	start := time.Now()
	slowDone := make(chan error, 1)
	go func() {
		_, err := a.Send(context.Background(), dmSession("slow"), &messages.Delivery{Text: "eventually"})
		slowDone <- err
	}()
	srv.Await(t, "the 429", func() bool { return len(srv.Attempts()) >= 1 })

	if _, err := a.Send(t.Context(), dmSession("fast"), &messages.Delivery{Text: "right away"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-slowDone:
		t.Fatal("the rate-limited send finished before the other channel's: it was not waiting")
	default:
	}
	if err := <-slowDone; err != nil {
		t.Fatalf("rate-limited send: %v", err)
	}
	if el := time.Since(start); el < wait-50*time.Millisecond {
		t.Errorf("retried after %v, before retry_after %v", el, wait)
	}
	var statuses []int
	for _, p := range srv.Attempts() {
		if p.ChannelID == "slow" {
			statuses = append(statuses, p.Status)
		}
	}
	if len(statuses) != 2 || statuses[0] != 429 || statuses[1] != 200 {
		t.Errorf("attempts on the limited channel: %v, want [429 200]", statuses)
	}
}

func TestSend_Failures(t *testing.T) {
	srv := discordtest.NewServer(t)
	a := newSender(t, srv, discord.Config{MaxRetryWait: 5 * time.Second})

	t.Run("RateLimitWaitIsCancellable", func(t *testing.T) {
		srv.FailPosts("cancel", 1, discordtest.RateLimited(4*time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := a.Send(ctx, dmSession("cancel"), &messages.Delivery{Text: "hi"})
			done <- err
		}()
		srv.Await(t, "the 429", func() bool { return len(srv.Attempts()) >= 1 })
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Send kept waiting out the rate limit after its context ended")
		}
	})

	t.Run("RateLimitBeyondMaxWait", func(t *testing.T) {
		srv.FailPosts("toolong", 1, discordtest.RateLimited(time.Minute))
		_, err := a.Send(t.Context(), dmSession("toolong"), &messages.Delivery{Text: "hi"})
		var apiErr *discord.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 429 || !apiErr.Temporary() || apiErr.RetryAfter != time.Minute {
			t.Fatalf("err = %v, want a temporary 429 APIError", err)
		}
		// The channel's bucket is now exhausted for a minute: the next send
		// says so at once instead of sleeping inside discordgo.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err = a.Send(ctx, dmSession("toolong"), &messages.Delivery{Text: "again"})
		if !errors.As(err, &apiErr) || apiErr.Status != 429 {
			t.Errorf("second send: err = %v, want a 429 APIError", err)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("second send took %v; it slept on the exhausted bucket", el)
		}
		// Other channels are unaffected.
		if _, err := a.Send(t.Context(), dmSession("elsewhere"), &messages.Delivery{Text: "hi"}); err != nil {
			t.Errorf("send to another channel: %v", err)
		}
	})

	t.Run("ServerErrorsRetried", func(t *testing.T) {
		srv.FailPosts("flaky", 2, discordtest.ServerError())
		rec, err := a.Send(t.Context(), dmSession("flaky"), &messages.Delivery{Text: "third time lucky"})
		if err != nil || len(rec.GetMessageIds()) != 1 {
			t.Fatalf("receipt %v, err %v", rec, err)
		}
		n := 0
		for _, p := range srv.Attempts() {
			if p.ChannelID == "flaky" {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
	})

	t.Run("LostAnswerNeverPostsTwice", func(t *testing.T) {
		f := discordtest.ServerError()
		f.AfterCreate = true // the message is created, the answer is a 500
		srv.FailPosts("lost", 1, f)
		rec, err := a.Send(t.Context(), dmSession("lost"), &messages.Delivery{Text: "only once"})
		if err != nil {
			t.Fatal(err)
		}
		posts := srv.PostsTo("lost")
		if len(posts) != 1 {
			t.Fatalf("%d messages in the channel, want 1", len(posts))
		}
		if ids := rec.GetMessageIds(); len(ids) != 1 || ids[0] != posts[0].MessageID {
			t.Errorf("receipt ids %v, want [%s]", ids, posts[0].MessageID)
		}
		var dup int
		for _, p := range srv.Attempts() {
			if p.ChannelID == "lost" && p.Duplicate {
				dup++
			}
		}
		if dup != 1 {
			t.Errorf("%d retries answered from the nonce, want 1", dup)
		}
	})

	t.Run("UnknownChannelReportedNotRetried", func(t *testing.T) {
		srv.FailPosts("gone", 5, discordtest.UnknownChannel())
		rec, err := a.Send(t.Context(), dmSession("gone"), &messages.Delivery{Text: "hello?"})
		var apiErr *discord.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != 10003 || apiErr.Temporary() {
			t.Fatalf("err = %v, want 404/10003", err)
		}
		if !strings.Contains(err.Error(), "Unknown Channel") || rec.GetError() == "" {
			t.Errorf("error %q / receipt error %q should say why", err, rec.GetError())
		}
		n := 0
		for _, p := range srv.Attempts() {
			if p.ChannelID == "gone" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})

	t.Run("NotADiscordSession", func(t *testing.T) {
		s := messages.MustSession(messages.Telegram, messages.DM, "42", "", "")
		if _, err := a.Send(t.Context(), s, &messages.Delivery{Text: "hi"}); !errors.Is(err, messages.ErrInvalidSession) {
			t.Errorf("err = %v, want ErrInvalidSession", err)
		}
		if _, err := a.Send(t.Context(), messages.Session{}, &messages.Delivery{Text: "hi"}); err == nil {
			t.Error("the zero session was accepted")
		}
	})

	t.Run("EmptyDelivery", func(t *testing.T) {
		if _, err := a.Send(t.Context(), dmSession("empty"), &messages.Delivery{}); err == nil {
			t.Error("an empty delivery was accepted")
		}
	})
}

func TestNew_Validates(t *testing.T) {
	if _, err := discord.New(discord.Config{}, discord.Deps{Gate: allowAllBut()}); err == nil {
		t.Error("no token accepted")
	}
	if _, err := discord.New(discord.Config{Token: "x"}, discord.Deps{}); err == nil {
		t.Error("no gate accepted")
	}
	if _, err := discord.New(discord.Config{Token: "x", APIURL: "ftp://nope"}, discord.Deps{Gate: allowAllBut()}); err == nil {
		t.Error("a non-HTTP API URL accepted")
	}
	a, err := discord.New(discord.Config{Token: "x"}, discord.Deps{Gate: allowAllBut()})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Capabilities()
	if c.Platform != messages.Discord || c.VoiceFormat != messages.FormatOggOpus || !c.VoiceNotes || c.TextLimit != 2000 || c.MaxVoiceBytes != 10<<20 {
		t.Errorf("capabilities = %+v", c)
	}
}

// TestSend_ResentDeliveryPostsOnce: a delivery sent again after a restart
// (same idempotency key, a new adapter) posts nothing new: its nonces are
// derived from the key, and Discord answers with the messages it has.
func TestSend_ResentDeliveryPostsOnce(t *testing.T) {
	srv := discordtest.NewServer(t)
	long := strings.Repeat("word ", 600) // two chunks
	d := &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: long, Seq: 3, IdempotencyKey: "discord:dm:again#3"}
	first, err := newSender(t, srv, discord.Config{}).Send(t.Context(), dmSession("again"), d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := newSender(t, srv, discord.Config{}).Send(t.Context(), dmSession("again"), d)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.PostsTo("again")); n != 2 {
		t.Fatalf("%d messages in the channel, want the 2 chunks once", n)
	}
	if strings.Join(first.GetMessageIds(), ",") != strings.Join(again.GetMessageIds(), ",") {
		t.Fatalf("resend answered %v, first send %v", again.GetMessageIds(), first.GetMessageIds())
	}
	// A delivery without a key is a new message each time (positive control).
	d.IdempotencyKey = ""
	if _, err := newSender(t, srv, discord.Config{}).Send(t.Context(), dmSession("again"), d); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.PostsTo("again")); n != 4 {
		t.Fatalf("%d messages after a keyless send, want 4", n)
	}
}
