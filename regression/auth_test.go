package regression

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermesd/hermesd/access"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/platforms/discord/discordtest"
	"github.com/hermesd/hermesd/platforms/telegram/telegramtest"
)

// pairingWorld is a world whose Telegram and Discord allowlists are empty:
// every user is unknown until the owner approves them through pairing.
func pairingWorld(t *testing.T) *world {
	t.Helper()
	return newWorld(t, worldOptions{env: map[string]string{
		"TELEGRAM_ALLOWED_USERS": "",
		"DISCORD_ALLOWED_USERS":  "",
	}})
}

var pairingCodeRE = regexp.MustCompile(`hermesd pairing approve ([a-z]+) ([A-Z0-9]{8})\b`)

// awaitPairingCode waits for the pairing code sent into chat and returns it.
func awaitPairingCode(t *testing.T, w *world, chat string, p messages.Platform) string {
	t.Helper()
	var code string
	w.await(t, "a pairing code in "+chat, 30*time.Second, func(o []out) bool {
		for _, x := range in(o, chat) {
			if m := pairingCodeRE.FindStringSubmatch(x.text); m != nil && m[1] == string(p) {
				code = m[2]
				return true
			}
		}
		return false
	})
	return code
}

// ownerGate is the gate the `hermesd pairing` CLI builds on the store.
func ownerGate(w *world) *access.Gate {
	g := access.New(w.d.Store(), nil)
	g.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return g
}

// approve does what `hermesd pairing approve <platform> <code>` does, on the
// running daemon's store.
func approve(t *testing.T, w *world, p messages.Platform, code, wantUser string) {
	t.Helper()
	user, err := ownerGate(w).Approve(context.Background(), p, code)
	if err != nil {
		t.Fatalf("approve %s %s: %v", p, code, err)
	}
	if user != wantUser {
		t.Fatalf("approve %s %s approved user %q, want %q", p, code, user, wantUser)
	}
}

// neverHeard fails if any model request ever carried one of toks.
func neverHeard(t *testing.T, w *world, toks ...string) {
	t.Helper()
	for _, r := range w.model.Requests() {
		for _, m := range r.Request.Messages {
			for _, tok := range toks {
				if strings.Contains(m.Content, tok) {
					t.Fatalf("the model was sent %s, from a user who was refused: %q", tok, m.Content)
				}
			}
		}
	}
}

// noSession fails if the runtime holds a session whose key contains sub.
func noSession(t *testing.T, w *world, sub string) {
	t.Helper()
	list, err := w.d.Runtime().Sessions(context.Background(), sub, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 0 {
		t.Fatalf("a refused user has a session: %+v", list.Sessions)
	}
}

// notPending fails if user has a pairing request on p.
func notPending(t *testing.T, w *world, p messages.Platform, user string) {
	t.Helper()
	reqs, err := ownerGate(w).Pending(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.UserID == user {
			t.Fatalf("a group message created a pairing request for %s user %s", p, user)
		}
	}
}

// TestUnknownTelegramUserGetsAPairingCodeAndReachesTheModelOnlyOnceApproved:
// with no allowlist, a stranger's DM is answered with a pairing code, once,
// and never reaches the model (nor, later, its history); once the owner
// approves the code, the next message is answered.
func TestUnknownTelegramUserGetsAPairingCodeAndReachesTheModelOnlyOnceApproved(t *testing.T) {
	w := pairingWorld(t)
	const user = 4242
	chat := "telegram:4242"
	tok1, tok2, tok3 := token("telegram", "4242", 1), token("telegram", "4242", 2), token("telegram", "4242", 3)

	w.tg.SendText(user, user, "hello "+tok1)
	code := awaitPairingCode(t, w, chat, messages.Telegram)
	id2 := w.tg.SendText(user, user, "hello again "+tok2)
	// The poller confirms an update to Telegram only once it has settled
	// (here: refused by the gate), so an offset past it is the fence.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.tg.WaitFor(ctx, func(calls []telegramtest.Call) bool {
		for _, c := range calls {
			if off, err := strconv.ParseInt(c.Fields["offset"], 10, 64); c.Method == "getUpdates" && err == nil && off > id2 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the second message never settled: %v", err)
	}
	if n := w.model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for a user nobody approved", n)
	}

	approve(t, w, messages.Telegram, code, "4242")
	w.tg.SendText(user, user, "hello "+tok3)
	outs := w.await(t, "an answer once approved", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tok3) })
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	// The adapter handles a chat's messages in order, so the second message
	// went through the gate before the third was answered: it got nothing
	// (one reply per code lifetime, issue 11), and nothing was answered.
	var before []out
	for _, o := range in(outs, chat) {
		if strings.Contains(o.text, "ack "+tok3) {
			break
		}
		before = append(before, o)
	}
	if len(before) != 1 {
		t.Fatalf("a stranger got %d replies before approval, want only the code:\n%s", len(before), dump(outs))
	}
	for _, o := range before {
		if strings.Contains(o.text, "ack") || o.voice {
			t.Fatalf("an unknown user got an answer: %q", o.text)
		}
	}
	if w.model.Calls() == 0 {
		t.Fatal("the approved user's answer did not come from the model")
	}
	neverHeard(t, w, tok1, tok2)
}

// TestUnknownUserInATelegramGroupGetsSilence: in a group, a stranger who
// addresses the bot gets no answer, no pairing code (not even privately),
// no session and no model call, while an approved member of the same group
// is answered.
func TestUnknownUserInATelegramGroupGetsSilence(t *testing.T) {
	w := pairingWorld(t)
	const member, stranger, group = 4343, 5151, -100777
	w.tg.SendText(member, member, "hi")
	approve(t, w, messages.Telegram, awaitPairingCode(t, w, "telegram:4343", messages.Telegram), "4343")

	chat := "telegram:-100777"
	tokB, tokA := token("telegram", "-100777", 1), token("telegram", "-100777", 2)
	idB := w.tg.SendText(group, stranger, "hello "+tokB, telegramtest.InGroup(), telegramtest.Mention())
	// The member speaks after the stranger, in the same chat: the adapter
	// handles one chat's messages in order, so once the member is
	// answered the stranger's message went through the gate.
	w.tg.SendText(group, member, "hello "+tokA, telegramtest.InGroup(), telegramtest.Mention())
	w.await(t, "the member's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tokA) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.tg.WaitConfirmed(ctx, idB); err != nil {
		t.Fatal(err)
	}
	outs := w.outputs()
	if got := in(outs, chat); len(got) != 1 {
		t.Fatalf("the group got %d messages, want only the member's answer\n%s", len(got), dump(got))
	}
	if got := in(outs, "telegram:5151"); len(got) != 0 {
		t.Fatalf("the stranger was written to privately\n%s", dump(got))
	}
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	neverHeard(t, w, tokB)
	noSession(t, w, ":u5151")
	notPending(t, w, messages.Telegram, "5151")
}

// TestUnknownDiscordUserGetsAPairingCodeAndGroupSilence: the same rules on
// Discord: a stranger's DM gets a pairing code and no model call; once
// approved they are answered; a stranger in a guild channel gets silence.
func TestUnknownDiscordUserGetsAPairingCodeAndGroupSilence(t *testing.T) {
	w := pairingWorld(t)
	dm := "discord:900"
	tok1, tok2 := token("discord", "900", 1), token("discord", "900", 2)
	w.dc.DM("900", "90", "hello "+tok1)
	code := awaitPairingCode(t, w, dm, messages.Discord)
	if n := w.model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for a user nobody approved", n)
	}
	approve(t, w, messages.Discord, code, "90")
	w.dc.DM("900", "90", "hello "+tok2)
	w.await(t, "an answer once approved", 30*time.Second, func(o []out) bool { return hasText(in(o, dm), "ack "+tok2) })
	if w.model.Calls() == 0 {
		t.Fatal("the approved user's answer did not come from the model")
	}

	chat := "discord:901"
	tokB, tokA := token("discord", "901", 3), token("discord", "901", 4)
	w.dc.GuildMessage("g1", "901", "91", "hello "+tokB, true)
	w.dc.GuildMessage("g1", "901", "90", "hello "+tokA, true)
	outs := w.await(t, "the member's answer", 30*time.Second, func(o []out) bool { return hasText(in(o, chat), "ack "+tokA) })
	if got := in(outs, chat); len(got) != 1 {
		t.Fatalf("the channel got %d messages, want only the member's answer\n%s", len(got), dump(got))
	}
	if bad := misrouted(outs); len(bad) > 0 {
		t.Fatalf("%v\n%s", bad, dump(outs))
	}
	neverHeard(t, w, tok1, tokB)
	noSession(t, w, ":u91")
	notPending(t, w, messages.Discord, "91")
}

// TestUnknownUsersVoiceIsNeitherTranscribedNorAnswered: a stranger's voice
// note is refused before anything is done with it: no download for the
// paid transcription endpoint, no model call, just the pairing code.
func TestUnknownUsersVoiceIsNeitherTranscribedNorAnswered(t *testing.T) {
	f := newSTTFake(t)
	w := newWorld(t, worldOptions{env: map[string]string{
		"TELEGRAM_ALLOWED_USERS": "",
		"DISCORD_ALLOWED_USERS":  "",
		"HERMES_STT_PROVIDER":    "openai",
		"HERMES_STT_BASE_URL":    f.URL,
	}})
	tgAudio, dcAudio := discordtest.OggOpus(600*time.Millisecond), discordtest.OggOpus(800*time.Millisecond)
	f.expect(tgAudio, "hello "+token("telegram", "4545", 1))
	f.expect(dcAudio, "hello "+token("discord", "950", 2))
	w.tg.SendVoice(4545, 4545, tgAudio, 1)
	w.dc.VoiceMessage("", "950", "95", dcAudio, 0.8)
	awaitPairingCode(t, w, "telegram:4545", messages.Telegram)
	awaitPairingCode(t, w, "discord:950", messages.Discord)
	if ups := f.got(); len(ups) != 0 {
		t.Fatalf("a stranger's voice was sent for transcription %d times", len(ups))
	}
	if n := w.model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for strangers", n)
	}
	if outs := w.outputs(); countVoices(outs) != 0 || len(outs) != 2 {
		t.Fatalf("strangers got more than their pairing codes\n%s", dump(outs))
	}
}
