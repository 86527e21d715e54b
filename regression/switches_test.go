package regression

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// The group and channel switches of docs/configuration.md, each set the way
// an operator sets it (environment) and checked through the fake platforms.
// A message that must be ignored is followed by a positive control in the
// same conversation: once the control is answered, the ignored message has
// been through the adapter (both arrive in order), so "it was never heard"
// is a fact, not a hope.

// ignoredThenControl asserts that the model never saw ignored and that no
// reply in chat carries it, after control was answered there.
func ignoredThenControl(t *testing.T, w *world, chat, ignored, control string) {
	t.Helper()
	outs := w.await(t, "the control message's answer in "+chat, 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+control) })
	neverHeard(t, w, ignored)
	if hasText(in(outs, chat), ignored) {
		t.Fatalf("an ignored message was answered in %s:\n%s", chat, dump(in(outs, chat)))
	}
}

// heardInHistory reports whether some model request that answered tok also
// carried earlier in its history.
func heardInHistory(w *world, tok, earlier string) bool {
	for _, r := range w.model.Requests() {
		var sawTok, sawEarlier bool
		for _, m := range r.Request.Messages {
			sawTok = sawTok || strings.Contains(m.Content, tok)
			sawEarlier = sawEarlier || strings.Contains(m.Content, earlier)
		}
		if sawTok && sawEarlier {
			return true
		}
	}
	return false
}

// sessionKeys lists the live session keys containing sub.
func sessionKeys(t *testing.T, w *world, sub string) []string {
	t.Helper()
	list, err := w.d.Runtime().Sessions(context.Background(), sub, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range list.Sessions {
		keys = append(keys, s.Key)
	}
	return keys
}

// TestTelegramGroup_MentionRequiredExceptInFreeResponseChats: by default a
// group message that does not address the bot is ignored; a chat listed in
// TELEGRAM_FREE_RESPONSE_CHATS is answered without a mention, and listing it
// opens no other group.
func TestTelegramGroup_MentionRequiredExceptInFreeResponseChats(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"TELEGRAM_FREE_RESPONSE_CHATS": "-1002"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	quiet, control := token("telegram", "-1001", 1), token("telegram", "-1001", 2)
	id := w.tg.SendText(-1001, 71, "hello "+quiet, telegramtest.InGroup())
	if err := w.tg.WaitConfirmed(ctx, id); err != nil {
		t.Fatal(err)
	}
	w.tg.SendText(-1001, 71, "hello "+control, telegramtest.InGroup(), telegramtest.Mention())
	ignoredThenControl(t, w, "telegram:-1001", quiet, control)

	free := token("telegram", "-1002", 3)
	w.tg.SendText(-1002, 71, "hello "+free, telegramtest.InGroup())
	w.await(t, "an unaddressed message answered in the free-response chat", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "telegram:-1002"), "ack "+free)
	})
}

// TestTelegramGroup_MentionOffAnswersEveryMessage: TELEGRAM_REQUIRE_MENTION
// =off makes the bot answer plain group messages everywhere.
func TestTelegramGroup_MentionOffAnswersEveryMessage(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"TELEGRAM_REQUIRE_MENTION": "off"}})
	tok := token("telegram", "-1011", 1)
	w.tg.SendText(-1011, 72, "hello "+tok, telegramtest.InGroup())
	w.await(t, "an unaddressed group message answered", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "telegram:-1011"), "ack "+tok)
	})
}

// TestTelegramGroup_SessionsPerUserOrShared: by default two members of a
// group have separate conversations (neither's turn sees the other's
// message); with TELEGRAM_GROUP_SESSIONS_PER_USER=off the group has one.
func TestTelegramGroup_SessionsPerUserOrShared(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "per-user", true: "shared"}[shared]
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"TELEGRAM_REQUIRE_MENTION": "off"}
			if shared {
				env["TELEGRAM_GROUP_SESSIONS_PER_USER"] = "off"
			}
			w := newWorld(t, worldOptions{env: env})
			alice, bob := token("telegram", "-1021", 1), token("telegram", "-1021", 2)
			w.tg.SendText(-1021, 73, "hello "+alice, telegramtest.InGroup())
			w.await(t, "alice's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, "telegram:-1021"), "ack "+alice) })
			w.tg.SendText(-1021, 74, "hello "+bob, telegramtest.InGroup())
			w.await(t, "bob's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, "telegram:-1021"), "ack "+bob) })

			keys := sessionKeys(t, w, "telegram:group:-1021")
			if shared {
				if len(keys) != 1 || keys[0] != "telegram:group:-1021" {
					t.Fatalf("shared group sessions: %v, want one telegram:group:-1021", keys)
				}
				if !heardInHistory(w, bob, alice) {
					t.Fatal("bob's turn did not see alice's message in a shared group")
				}
				return
			}
			if len(keys) != 2 {
				t.Fatalf("per-user group sessions: %v, want one per member", keys)
			}
			if heardInHistory(w, bob, alice) {
				t.Fatal("bob's turn saw alice's message: per-user sessions leaked")
			}
		})
	}
}

// TestDiscordChannel_MentionRequiredExceptInFreeResponseChannels: an
// unmentioned guild message is ignored by default; a channel in
// DISCORD_FREE_RESPONSE_CHANNELS (and a thread under it) is answered
// without one, and listing it opens no other channel.
func TestDiscordChannel_MentionRequiredExceptInFreeResponseChannels(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"DISCORD_FREE_RESPONSE_CHANNELS": "802"}})
	quiet, control := token("discord", "801", 1), token("discord", "801", 2)
	w.dc.GuildMessage("g1", "801", "81", "hello "+quiet, false)
	w.dc.GuildMessage("g1", "801", "81", "hello "+control, true)
	ignoredThenControl(t, w, "discord:801", quiet, control)

	free, inThread := token("discord", "802", 3), token("discord", "803", 4)
	w.dc.GuildMessage("g1", "802", "81", "hello "+free, false)
	w.dc.ThreadMessage("g1", "802", "803", "81", "hello "+inThread, false)
	w.await(t, "unmentioned messages answered in the free-response channel and its thread", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "discord:802"), "ack "+free) && hasText(in(o, "discord:803"), "ack "+inThread)
	})
}

// TestDiscordChannel_MentionOffAnswersEveryMessage: DISCORD_REQUIRE_MENTION
// =false (Hermes' spelling) makes the bot answer every guild message.
func TestDiscordChannel_MentionOffAnswersEveryMessage(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"DISCORD_REQUIRE_MENTION": "false"}})
	tok := token("discord", "811", 1)
	w.dc.GuildMessage("g1", "811", "82", "hello "+tok, false)
	w.await(t, "an unmentioned guild message answered", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "discord:811"), "ack "+tok)
	})
}

// TestDiscordChannel_AutoThread: with DISCORD_AUTO_THREAD=on an addressed
// message in a channel gets a thread started from it and the answer lands
// in that thread, not the channel; a channel in DISCORD_NO_THREAD_CHANNELS
// is answered in place, and so is one where Discord refuses the thread
// (the bot lacks the permission).
func TestDiscordChannel_AutoThread(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"DISCORD_AUTO_THREAD": "on", "DISCORD_NO_THREAD_CHANNELS": "822"}})
	w.dc.ForbidThreads("823")
	threaded := token("discord", "821", 1)
	msgID := w.dc.GuildMessage("g1", "821", "83", "hello "+threaded, true)
	var thread string
	w.dc.Await(t, "a thread started from the message", func() bool {
		for _, ts := range w.dc.Threads() {
			if ts.ParentID == "821" && ts.MessageID == msgID {
				thread = ts.ThreadID
				return true
			}
		}
		return false
	})
	outs := w.await(t, "the answer in the new thread", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "discord:"+thread), "ack "+threaded)
	})
	if got := in(outs, "discord:821"); len(got) != 0 {
		t.Fatalf("auto-thread answered in the channel too:\n%s", dump(got))
	}
	if keys := sessionKeys(t, w, "discord:thread:821:"+thread); len(keys) != 1 {
		t.Fatalf("sessions %v: want the thread's", keys)
	}

	inPlace := token("discord", "822", 2)
	w.dc.GuildMessage("g1", "822", "83", "hello "+inPlace, true)
	w.await(t, "the answer in the no-thread channel itself", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "discord:822"), "ack "+inPlace)
	})
	for _, ts := range w.dc.Threads() {
		if ts.ParentID == "822" {
			t.Fatalf("a thread was started in a no-thread channel: %+v", ts)
		}
	}

	refused := token("discord", "823", 3)
	w.dc.GuildMessage("g1", "823", "83", "hello "+refused, true)
	w.await(t, "the answer in the channel that refused a thread", 30*time.Second, func(o []out) bool {
		return hasText(in(o, "discord:823"), "ack "+refused)
	})
}

// TestDiscordChannel_SharedSessions: DISCORD_GROUP_SESSIONS_PER_USER=off
// gives a channel one conversation: the second member's turn sees the
// first's message.
func TestDiscordChannel_SharedSessions(t *testing.T) {
	w := newWorld(t, worldOptions{env: map[string]string{"DISCORD_GROUP_SESSIONS_PER_USER": "off"}})
	alice, bob := token("discord", "831", 1), token("discord", "831", 2)
	w.dc.GuildMessage("g1", "831", "84", "hello "+alice, true)
	w.await(t, "alice's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, "discord:831"), "ack "+alice) })
	w.dc.GuildMessage("g1", "831", "85", "hello "+bob, true)
	w.await(t, "bob's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, "discord:831"), "ack "+bob) })
	if keys := sessionKeys(t, w, "discord:group:831"); len(keys) != 1 || keys[0] != "discord:group:831" {
		t.Fatalf("shared channel sessions: %v, want one discord:group:831", keys)
	}
	if !heardInHistory(w, bob, alice) {
		t.Fatal("bob's turn did not see alice's message in a shared channel")
	}
}
