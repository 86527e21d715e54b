package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms"
	"github.com/hermesd/hermesd/platforms/telegram"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

func TestRoundTrip_TextInReplyOut(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	run(t, a, box.Inbound)

	srv.SendText(42, 42, "hello there", telegramtest.From("Ada", "ada"))
	m := box.wait(t, 1)[0]
	if got, want := m.SessionKey, "telegram:dm:42"; got != want {
		t.Errorf("session key = %q, want %q", got, want)
	}
	if m.SenderId != "42" || m.SenderName != "Ada" || m.Text != "hello there" || m.MessageId != "1" {
		t.Errorf("message = %+v", m)
	}

	rec, err := a.Send(ctxT(t), mustSession(t, m.SessionKey), &messages.Delivery{
		Kind: messages.DeliveryKind_DELIVERY_KIND_TEXT, Text: "**hi** back", ReplyToId: m.MessageId, Seq: 7,
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := srv.SentTo(42)
	if len(sent) != 1 || sent[0].Method != "sendMessage" {
		t.Fatalf("sent to chat 42: %+v", sent)
	}
	f := sent[0].Fields
	if f["text"] != "<b>hi</b> back" || f["parse_mode"] != "HTML" {
		t.Errorf("sendMessage text=%q parse_mode=%q", f["text"], f["parse_mode"])
	}
	if !strings.Contains(f["reply_parameters"], `"message_id":1`) || !strings.Contains(f["reply_parameters"], `"allow_sending_without_reply":true`) {
		t.Errorf("reply_parameters = %q", f["reply_parameters"])
	}
	if rec.Seq != 7 || rec.ShownAs != "text" || len(rec.MessageIds) != 1 || rec.MessageIds[0] != "2" {
		t.Errorf("receipt = %+v", rec)
	}
}

func TestInbound_Groups(t *testing.T) {
	const group = -1001234
	cases := []struct {
		name   string
		shared bool
		send   func(srv *telegramtest.Server)
		want   string // text that reaches hermesd, "" for nothing
		key    string
	}{
		{"plain chatter is ignored", false, func(s *telegramtest.Server) { s.SendText(group, 7, "lunch?", telegramtest.InGroup()) }, "", ""},
		{"a mention is answered and stripped", false, func(s *telegramtest.Server) {
			s.SendText(group, 7, "what is 2+2", telegramtest.InGroup(), telegramtest.Mention())
		}, "what is 2+2", "telegram:group:-1001234:u7"},
		{"a reply to the bot is answered", false, func(s *telegramtest.Server) {
			s.SendText(group, 8, "and 3+3?", telegramtest.InGroup(), telegramtest.ReplyTo(5, true))
		}, "and 3+3?", "telegram:group:-1001234:u8"},
		{"a reply to someone else is not", false, func(s *telegramtest.Server) {
			s.SendText(group, 8, "agreed", telegramtest.InGroup(), telegramtest.ReplyTo(5, false))
		}, "", ""},
		{"a command for the bot loses its suffix", false, func(s *telegramtest.Server) {
			s.SendText(group, 7, "/new@fake_bot please", telegramtest.InGroup())
		}, "/new please", "telegram:group:-1001234:u7"},
		{"a command for another bot is ignored", false, func(s *telegramtest.Server) {
			s.SendText(group, 7, "/new@other_bot", telegramtest.InGroup())
		}, "", ""},
		{"a shared group has one session", true, func(s *telegramtest.Server) {
			s.SendText(group, 9, "hi all", telegramtest.InGroup(), telegramtest.Mention())
		}, "hi all", "telegram:group:-1001234"},
		{"a forum topic is its own shared session", false, func(s *telegramtest.Server) {
			s.SendText(group, 9, "in the topic", telegramtest.InTopic(77), telegramtest.Mention())
		}, "in the topic", "telegram:topic:-1001234:77"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := telegramtest.NewServer(t)
			a := setup(t, srv, func(c *telegram.Config, _ *telegram.Deps) { c.SharedGroupSessions = tc.shared })
			box := newInbox()
			run(t, a, box.Inbound)
			tc.send(srv)
			// A marker from another chat proves the first update was handled.
			marker := srv.SendText(1, 1, "marker")
			if err := srv.WaitConfirmed(ctxT(t), marker-1); err != nil {
				t.Fatal(err)
			}
			var got []*messages.UserMessage
			for _, m := range box.wait(t, 1) {
				if m.SessionKey != "telegram:dm:1" {
					got = append(got, m)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("reached hermesd: %+v", got[0])
				}
				return
			}
			if len(got) != 1 || got[0].Text != tc.want || got[0].SessionKey != tc.key {
				t.Fatalf("got %+v, want text %q in %s", got, tc.want, tc.key)
			}
			if got[0].ReplyToId != "" && !strings.Contains(tc.name, "reply") {
				t.Errorf("reply_to_id = %q for a message that replies to nothing", got[0].ReplyToId)
			}
		})
	}
}

func TestInbound_RepliesCarryTheirTarget(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendText(42, 42, "about that", telegramtest.ReplyTo(3, true))
	if m := box.wait(t, 1)[0]; m.ReplyToId != "3" {
		t.Errorf("reply_to_id = %q, want 3", m.ReplyToId)
	}
}

func TestTopic_ReplyGoesToTheTopic(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendText(-100500, 3, "hello topic", telegramtest.InTopic(12), telegramtest.Mention())
	m := box.wait(t, 1)[0]
	if _, err := a.Send(ctxT(t), mustSession(t, m.SessionKey), text("answer")); err != nil {
		t.Fatal(err)
	}
	c := srv.CallsTo("sendMessage")[0]
	if c.ChatID != -100500 || c.Fields["message_thread_id"] != "12" {
		t.Errorf("sendMessage chat=%d thread=%q, want -100500 / 12", c.ChatID, c.Fields["message_thread_id"])
	}
	if err := a.Indicate(ctxT(t), mustSession(t, m.SessionKey), platforms.RecordVoice); err != nil {
		t.Fatal(err)
	}
	act := srv.CallsTo("sendChatAction")[0]
	if act.Fields["action"] != "record_voice" || act.Fields["message_thread_id"] != "12" {
		t.Errorf("sendChatAction fields = %v", act.Fields)
	}
}

type transcriber struct {
	mu    sync.Mutex
	audio []byte
	name  string
	text  string
	err   error
}

func (tr *transcriber) Transcribe(_ context.Context, audio []byte, filename string) (string, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.audio, tr.name = append([]byte(nil), audio...), filename
	return tr.text, tr.err
}

func TestVoiceIn_IsDownloadedAndTranscribed(t *testing.T) {
	srv := telegramtest.NewServer(t)
	stt := &transcriber{text: "what's the weather"}
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Transcriber = stt })
	box := newInbox()
	run(t, a, box.Inbound)
	ogg := voiceOgg(t)
	srv.SendVoice(42, 42, ogg, 2)

	m := box.wait(t, 1)[0]
	if !m.FromVoice || m.Text != "what's the weather" {
		t.Errorf("message text=%q from_voice=%v", m.Text, m.FromVoice)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Kind != "voice" || m.Attachments[0].DurationSecs != 2 {
		t.Errorf("attachments = %v", m.Attachments)
	}
	if len(srv.CallsTo("getFile")) != 1 {
		t.Errorf("getFile calls = %d, want 1", len(srv.CallsTo("getFile")))
	}
	stt.mu.Lock()
	defer stt.mu.Unlock()
	if !bytes.Equal(stt.audio, ogg) || !strings.HasSuffix(stt.name, ".ogg") {
		t.Errorf("transcriber got %d bytes named %q, want the %d sent, named *.ogg", len(stt.audio), stt.name, len(ogg))
	}
}

func TestVoiceIn_WithoutTranscriber(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendVoice(42, 42, voiceOgg(t), 2)
	m := box.wait(t, 1)[0]
	if m.FromVoice || m.Text != "" || len(m.Attachments) != 1 || m.Attachments[0].Kind != "voice" {
		t.Errorf("got %+v, want a voice attachment with no text", m)
	}
	if n := len(srv.CallsTo("getFile")); n != 0 {
		t.Errorf("downloaded the voice note (%d getFile) with nothing to transcribe it", n)
	}
}

func TestVoiceIn_TooLargeIsRefusedWithANotice(t *testing.T) {
	srv := telegramtest.NewServer(t)
	stt := &transcriber{text: "never"}
	a := setup(t, srv, func(c *telegram.Config, d *telegram.Deps) { d.Transcriber, c.MaxInboundBytes = stt, 1000 })
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendVoice(42, 42, voiceOgg(t), 2)
	srv.SendText(42, 42, "still there?")
	m := box.wait(t, 1)
	if len(m) != 1 || m[0].Text != "still there?" {
		t.Fatalf("reached hermesd: %+v", m)
	}
	notice := srv.SentTo(42)
	if len(notice) != 1 || !strings.Contains(notice[0].Fields["text"], "too large") {
		t.Errorf("user told %+v, want a too-large notice", notice)
	}
	if stt.audio != nil {
		t.Error("transcriber called for an oversized voice note")
	}
}

func TestInbound_AttachmentsAreDescribed(t *testing.T) {
	srv := telegramtest.NewServer(t)
	stt := &transcriber{text: "should not be used"}
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Transcriber = stt })
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendAudio(42, 42, "song.mp3", "audio/mpeg", []byte("ID3fake"), 180)
	srv.SendDocument(42, 42, "report.pdf", "application/pdf", []byte("%PDF-1.4"), telegramtest.WithCaption("summarise this"))
	srv.SendPhoto(42, 42, bytes.Repeat([]byte{0xFF}, 500), "what is this?")
	got := box.wait(t, 3)
	want := []struct{ kind, name, text string }{
		{"audio", "song.mp3", ""}, {"document", "report.pdf", "summarise this"}, {"photo", "photo.jpg", "what is this?"},
	}
	for i, w := range want {
		m := got[i]
		if len(m.Attachments) != 1 || m.Attachments[0].Kind != w.kind || m.Attachments[0].Name != w.name || m.Text != w.text || m.FromVoice {
			t.Errorf("message %d = text %q attachments %v, want %s %s %q", i, m.Text, m.Attachments, w.kind, w.name, w.text)
		}
	}
	if got[2].Attachments[0].Size != 500 {
		t.Errorf("photo size = %d, want the largest size's 500", got[2].Attachments[0].Size)
	}
	if stt.audio != nil || len(srv.CallsTo("getFile")) != 0 {
		t.Error("audio or documents were downloaded or transcribed")
	}
}

func TestInbound_UnauthorizedNeverReachesHermesd(t *testing.T) {
	srv := telegramtest.NewServer(t)
	g := &gate{allowed: map[string]bool{"1": true}, reply: "You are not on the list. Pairing code: ABCD2345"}
	a := setup(t, srv, func(_ *telegram.Config, d *telegram.Deps) { d.Gate = g })
	box := newInbox()
	run(t, a, box.Inbound)

	srv.SendText(99, 99, "let me in")
	srv.SendText(-100777, 99, "me too", telegramtest.InGroup(), telegramtest.Mention())
	srv.SendVoice(99, 99, voiceOgg(t), 1)
	last := srv.SendText(1, 1, "I am allowed")
	if err := srv.WaitConfirmed(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	got := box.wait(t, 1)
	if len(got) != 1 || got[0].SenderId != "1" {
		t.Fatalf("reached hermesd: %+v", got)
	}
	replies := srv.SentTo(99)
	if len(replies) != 2 || replies[0].Fields["text"] != g.reply {
		t.Errorf("refused user told %+v, want the gate's reply twice (text and voice)", replies)
	}
	if n := len(srv.SentTo(-100777)); n != 0 {
		t.Errorf("%d messages sent to the group for a refused user; want silence", n)
	}
	if n := len(srv.CallsTo("getFile")); n != 0 {
		t.Errorf("refused user's voice was downloaded")
	}
}

func TestInbound_SplitTextIsMerged(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	box.hook = func(m *messages.UserMessage) error {
		mu.Lock()
		defer mu.Unlock()
		arrived[m.SessionKey] = time.Now()
		return nil
	}
	run(t, a, box.Inbound)

	first := strings.Repeat("abcd ", 800) + "wxyz" // 4004 units: near the limit, so maybe split
	srv.SendText(42, 42, first)
	srv.SendText(42, 42, "and the rest of it")
	start := time.Now()
	srv.SendText(43, 43, "short one")
	got := box.wait(t, 2)
	var merged *messages.UserMessage
	for _, m := range got {
		if m.SessionKey == "telegram:dm:42" {
			merged = m
		}
	}
	if merged == nil {
		t.Fatalf("got %+v", got)
	}
	if merged.Text != first+"\nand the rest of it" {
		t.Errorf("merged text ends %q", merged.Text[len(merged.Text)-40:])
	}
	mu.Lock()
	shortTook := arrived["telegram:dm:43"].Sub(start)
	mu.Unlock()
	if shortTook > 700*time.Millisecond {
		t.Errorf("an ordinary message took %v to arrive", shortTook)
	}
	if n := len(box.all()); n != 2 {
		t.Errorf("%d messages reached hermesd, want 2 (the continuation merged)", n)
	}

	// A long text without a continuation still arrives, after a short wait.
	srv.SendText(44, 44, first)
	if m := box.wait(t, 3)[2]; m.Text != first {
		t.Errorf("lone long text = %d bytes, want %d", len(m.Text), len(first))
	}
}

func TestInbound_MalformedUpdateIsSkipped(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	run(t, a, box.Inbound)
	srv.SendRawUpdate("message", json.RawMessage(`{"message_id":"x","date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"A"},"text":12}`))
	srv.SendText(42, 42, "next one")
	got := box.wait(t, 1)
	if len(got) != 1 || got[0].Text != "next one" {
		t.Fatalf("got %+v", got)
	}
	sent := srv.SentTo(42)
	if len(sent) != 1 || !strings.Contains(sent[0].Fields["text"], "couldn't read") {
		t.Errorf("user told %+v, want that the message could not be read", sent)
	}
}

func TestInbound_ErrorFromHermesdIsShownToTheUser(t *testing.T) {
	srv := telegramtest.NewServer(t)
	a := setup(t, srv, nil)
	box := newInbox()
	box.hook = func(m *messages.UserMessage) error {
		if m.Text == "huge" {
			return platforms.ErrTooLarge
		}
		if m.Text == "busy" {
			return errors.New("Too many messages at once; try again in a minute.")
		}
		return nil
	}
	run(t, a, box.Inbound)
	srv.SendText(42, 42, "huge")
	srv.SendText(42, 42, "busy")
	srv.SendText(42, 42, "fine")
	box.wait(t, 1)
	sent := srv.SentTo(42)
	if len(sent) != 2 || !strings.Contains(sent[0].Fields["text"], "too large") || !strings.Contains(sent[1].Fields["text"], "try again") {
		t.Errorf("user told %+v", sent)
	}
}
