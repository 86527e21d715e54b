package telegram_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// longAnswer is a 10,000-character answer in paragraphs, as a model writes.
func longAnswer() string {
	var b strings.Builder
	for i := 0; b.Len() < 10000; i++ {
		b.WriteString("Paragraph " + strconv.Itoa(i) + ": ")
		b.WriteString(strings.Repeat("lorem ipsum dolor sit amet ", 8))
		b.WriteString("\n\n")
	}
	return b.String()[:10000]
}

func TestSend_LongAnswerIsChunked(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	answer := longAnswer()
	rec, err := a.Send(ctxT(t), dm(42), text(answer))
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.SentTo(42)
	if len(sent) != 3 || len(rec.MessageIds) != 3 {
		t.Fatalf("sent %d messages (receipt %d ids), want 3", len(sent), len(rec.MessageIds))
	}
	var joined []string
	for i, c := range sent {
		vis, err := telegramtest.VisibleText(c.Fields["text"])
		if err != nil {
			t.Fatalf("part %d is not valid Telegram HTML: %v", i, err)
		}
		if n := utf16Units(vis); n > telegram.TextLimit {
			t.Errorf("part %d has %d UTF-16 units", i, n)
		}
		if i > 0 && c.Fields["reply_parameters"] != "" {
			t.Errorf("part %d replies too", i)
		}
		joined = append(joined, vis)
	}
	if got, want := strings.Fields(strings.Join(joined, " ")), strings.Fields(answer); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Error("the parts, in order, do not hold the whole answer")
	}
}

func utf16Units(s string) int {
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

func TestSend_EmojiAreNeverCutInHalf(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	answer := strings.Repeat("😀", 5000) // 10,000 UTF-16 units, no spaces
	if _, err := a.Send(ctxT(t), dm(42), text(answer)); err != nil {
		t.Fatal(err)
	}
	var total string
	for _, c := range srv.SentTo(42) {
		vis, _ := telegramtest.VisibleText(c.Fields["text"])
		if !utf8.ValidString(vis) || utf16Units(vis) > telegram.TextLimit {
			t.Errorf("part of %d units, valid UTF-8: %v", utf16Units(vis), utf8.ValidString(vis))
		}
		total += vis
	}
	if total != answer {
		t.Errorf("got %d runes back, want %d", utf8.RuneCountInString(total), 5000)
	}
}

func TestSend_429IsWaitedOut(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessage", 1, telegramtest.TooManyRequests(1))
	rec, err := a.Send(ctxT(t), dm(42), text("hello"))
	if err != nil {
		t.Fatal(err)
	}
	calls := srv.CallsTo("sendMessage")
	if len(calls) != 2 || calls[0].Faulted != "429" || !calls[1].OK() {
		t.Fatalf("calls = %+v", calls)
	}
	if gap := calls[1].Time.Sub(calls[0].Time); gap < 950*time.Millisecond {
		t.Errorf("retried after %v, Telegram asked for 1s", gap)
	}
	if len(rec.MessageIds) != 1 {
		t.Errorf("receipt = %+v", rec)
	}
}

func TestSend_429RetriesAreBoundedAndCancellable(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessage", 10, telegramtest.TooManyRequests(30))
	ctx, cancel := contextWithTimeout(t, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := a.Send(ctx, dm(42), text("hello")); err == nil {
		t.Fatal("Send succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancelled Send returned after %v", d)
	}
}

func TestSend_ServerErrorsAreRetried(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessage", 2, telegramtest.ServerError())
	if _, err := a.Send(ctxT(t), dm(42), text("hello")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.CallsTo("sendMessage")); n != 3 {
		t.Errorf("%d calls, want 2 failures and a success", n)
	}
}

func TestSend_BlockedIsNotRetried(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessage", 5, telegramtest.Blocked())
	_, err := a.Send(ctxT(t), dm(42), text("hello"))
	if !errors.Is(err, telegram.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	if n := len(srv.CallsTo("sendMessage")); n != 1 {
		t.Errorf("%d calls, want exactly 1", n)
	}
	if h := a.Health(); !strings.Contains(h.LastError, "blocked") {
		t.Errorf("health last error = %q", h.LastError)
	}
}

func TestSend_TimeoutIsNotRetried(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, func(c *telegram.Config, _ *telegram.Deps) { c.RequestTimeout = 300 * time.Millisecond })
	srv.FailNext("sendMessage", 1, telegramtest.Hang())
	_, err := a.Send(ctxT(t), dm(42), text("hello"))
	if !errors.Is(err, telegram.ErrUncertain) {
		t.Fatalf("err = %v, want ErrUncertain", err)
	}
	if n := len(srv.CallsTo("sendMessage")); n != 1 {
		t.Errorf("%d calls, want 1: the message may have been delivered", n)
	}
}

func TestSend_RejectedHTMLFallsBackToPlainText(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendMessage", 1, telegramtest.CantParseEntities())
	if _, err := a.Send(ctxT(t), dm(42), text("**bold** & <tags>")); err != nil {
		t.Fatal(err)
	}
	calls := srv.CallsTo("sendMessage")
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	if f := calls[1].Fields; f["parse_mode"] != "" || f["text"] != "bold & <tags>" {
		t.Errorf("fallback text=%q parse_mode=%q", f["text"], f["parse_mode"])
	}
}

func voiceDelivery(audio []byte, format, text string) *messages.Delivery {
	return &messages.Delivery{Kind: messages.DeliveryKind_DELIVERY_KIND_VOICE, Audio: audio, Format: format,
		DurationSecs: 1.5, Text: text, ReplyToId: "9"}
}

func TestSend_VoiceNote(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	ogg := voiceOgg(t)
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(ogg, "ogg/opus", "Here is *your* answer"))
	if err != nil {
		t.Fatal(err)
	}
	calls := srv.CallsTo("sendVoice")
	if len(calls) != 1 || rec.ShownAs != "voice" || len(rec.MessageIds) != 1 {
		t.Fatalf("sendVoice calls %d, receipt %+v", len(calls), rec)
	}
	c := calls[0]
	if c.Fields["chat_id"] != "42" || c.Fields["duration"] != "2" {
		t.Errorf("chat_id=%q duration=%q, want 42 and ceil(1.5)=2", c.Fields["chat_id"], c.Fields["duration"])
	}
	if c.Fields["caption"] != "Here is <i>your</i> answer" || c.Fields["parse_mode"] != "HTML" {
		t.Errorf("caption=%q parse_mode=%q", c.Fields["caption"], c.Fields["parse_mode"])
	}
	f := c.Files["voice"]
	if !strings.HasSuffix(f.Name, ".ogg") || !bytes.Equal(f.Data, ogg) || string(f.Data[:4]) != "OggS" || !bytes.Contains(f.Data[:64], []byte("OpusHead")) {
		t.Errorf("voice part %q of %d bytes is not the Ogg/Opus sent", f.Name, len(f.Data))
	}
	if !strings.Contains(c.Fields["reply_parameters"], `"message_id":9`) {
		t.Errorf("reply_parameters = %q", c.Fields["reply_parameters"])
	}
}

func TestSend_VoiceWithLongTextSendsTheTextAfter(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	long := strings.Repeat("spoken words ", 100) // 1300 units: over the caption limit
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(voiceOgg(t), "ogg/opus", long))
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.SentTo(42)
	if len(sent) != 2 || sent[0].Method != "sendVoice" || sent[0].Fields["caption"] != "" || sent[1].Method != "sendMessage" {
		t.Fatalf("sent %+v", sent)
	}
	if rec.ShownAs != "voice" || len(rec.MessageIds) != 2 {
		t.Errorf("receipt = %+v", rec)
	}
}

func TestSend_VoiceForbiddenFallsBackToAudio(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendVoice", 1, telegramtest.VoiceForbidden())
	ogg := voiceOgg(t)
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(ogg, "ogg/opus", "caption"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ShownAs != "audio" {
		t.Errorf("shown as %q, want audio", rec.ShownAs)
	}
	audio := srv.CallsTo("sendAudio")
	if len(audio) != 1 || !bytes.Equal(audio[0].Files["audio"].Data, ogg) || audio[0].Fields["caption"] != "caption" {
		t.Fatalf("sendAudio calls = %+v", audio)
	}
	// The chat's refusal is remembered: the next voice reply skips sendVoice.
	if _, err := a.Send(ctxT(t), dm(42), voiceDelivery(ogg, "ogg/opus", "again")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.CallsTo("sendVoice")); n != 1 {
		t.Errorf("sendVoice tried %d times, want once", n)
	}
}

func TestSend_VoiceFallbackChainEndsInText(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	srv.FailNext("sendVoice", 1, telegramtest.VoiceForbidden())
	srv.FailNext("sendAudio", 1, telegramtest.BadRequest("wrong file type"))
	srv.FailNext("sendDocument", 1, telegramtest.BadRequest("file is too big"))
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(voiceOgg(t), "ogg/opus", "the words"))
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.SentTo(42)
	if rec.ShownAs != "text" || len(sent) != 1 || sent[0].Fields["text"] != "the words" {
		t.Errorf("receipt %+v, sent %+v", rec, sent)
	}
}

func TestSend_OversizedVoiceGoesAsAudio(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	big := append(voiceOgg(t), make([]byte, telegram.MaxVoiceBytes)...)
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(big, "ogg/opus", ""))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ShownAs != "audio" || len(srv.CallsTo("sendVoice")) != 0 {
		t.Errorf("receipt %+v; sendVoice calls %d", rec, len(srv.CallsTo("sendVoice")))
	}
}

func TestSend_MP3GoesAsAudioAndGarbageAsText(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	mp3 := append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), make([]byte, 100)...)
	rec, err := a.Send(ctxT(t), dm(42), voiceDelivery(mp3, "mp3", "hi"))
	if err != nil || rec.ShownAs != "audio" {
		t.Fatalf("mp3: receipt %+v, err %v", rec, err)
	}
	if f := srv.CallsTo("sendAudio")[0].Files["audio"]; !strings.HasSuffix(f.Name, ".mp3") {
		t.Errorf("audio file named %q", f.Name)
	}
	// Bytes that claim to be Ogg/Opus but are not never become a voice note.
	rec, err = a.Send(ctxT(t), dm(42), voiceDelivery([]byte("RIFF....WAVEfmt "), "ogg/opus", "spoken text"))
	if err != nil || rec.ShownAs != "text" {
		t.Fatalf("garbage: receipt %+v, err %v", rec, err)
	}
	if n := len(srv.CallsTo("sendVoice")); n != 0 {
		t.Errorf("sendVoice called %d times", n)
	}
}

func TestIndicate_Typing(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	if err := a.Indicate(ctxT(t), dm(42), "typing"); err != nil {
		t.Fatal(err)
	}
	if c := srv.CallsTo("sendChatAction"); len(c) != 1 || c[0].Fields["action"] != "typing" || c[0].ChatID != 42 {
		t.Errorf("calls = %+v", c)
	}
}

func TestSend_RefusesForeignSessions(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	for _, s := range []messages.Session{{}, messages.MustSession(messages.Discord, messages.DM, "42", "", "")} {
		if _, err := a.Send(ctxT(t), s, text("x")); !errors.Is(err, messages.ErrInvalidSession) {
			t.Errorf("Send(%q) err = %v, want ErrInvalidSession", s.Key(), err)
		}
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("%d calls made", n)
	}
}
