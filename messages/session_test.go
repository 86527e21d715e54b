package messages

import (
	"errors"
	"testing"
)

func TestSession_KeyGrammar(t *testing.T) {
	cases := []struct {
		name string
		s    Session
		want string
	}{
		{"telegram private", MustSession(Telegram, DM, "42", "", ""), "telegram:dm:42"},
		{"telegram group per user", MustSession(Telegram, Group, "-100123", "", "7"), "telegram:group:-100123:u7"},
		{"telegram group shared", MustSession(Telegram, Group, "-100123", "", ""), "telegram:group:-100123"},
		{"telegram topic", MustSession(Telegram, Topic, "-100123", "55", ""), "telegram:topic:-100123:55"},
		{"discord dm", MustSession(Discord, DM, "555", "", ""), "discord:dm:555"},
		{"discord channel per user", MustSession(Discord, Group, "555", "", "42"), "discord:group:555:u42"},
		{"discord thread", MustSession(Discord, Thread, "555", "777", ""), "discord:thread:555:777"},
		{"web", MustSession(Web, DM, "browser-ab_C", "", ""), "web:dm:browser-ab_C"},
		{"topic whose thread starts with u", MustSession(Telegram, Topic, "1", "u2", "u3"), "telegram:topic:1:u2:uu3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.Key(); got != c.want {
				t.Fatalf("Key() = %q, want %q", got, c.want)
			}
			back, err := ParseKey(c.want)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", c.want, err)
			}
			if back != c.s {
				t.Fatalf("ParseKey(%q) = %#v, want %#v", c.want, back, c.s)
			}
		})
	}
}

func TestSession_ZeroIsInvalid(t *testing.T) {
	var s Session
	if s.Valid() {
		t.Fatal("zero Session is valid")
	}
	if s.Key() != "" {
		t.Fatalf("zero Session key = %q", s.Key())
	}
	if _, err := ParseKey(""); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("ParseKey(\"\") err = %v", err)
	}
}

func TestParseKey_Rejects(t *testing.T) {
	for _, key := range []string{
		"telegram", "telegram:dm", "telegram:dm:", "Telegram:dm:1", "telegram:chat:1",
		"telegram:topic:1", "telegram:dm:1:2", "telegram:dm:1:u", "telegram:dm:1:u2:u3",
		"web:dm:a b", "web:dm:a/b", "web:dm:" + string(make([]byte, 65)), "telegram:dm:1:u7:",
		"discord:thread:1:2:3", "telegram:dm:é",
	} {
		if s, err := ParseKey(key); err == nil {
			t.Errorf("ParseKey(%q) = %v, want error", key, s)
		}
	}
	if _, err := NewSession(Telegram, DM, "1", "9", ""); err == nil {
		t.Error("a dm with a thread id was accepted")
	}
	if _, err := NewSession(Telegram, Topic, "1", "", ""); err == nil {
		t.Error("a topic without a thread id was accepted")
	}
}

// FuzzParseKey checks that every key ParseKey accepts round-trips exactly,
// and that every valid Session's key parses back to it.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"telegram:dm:42", "telegram:group:-1:u7", "telegram:topic:-1:5", "discord:thread:1:2", "web:dm:x", "a:dm:b:uc", "x:topic:1:u:uu"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s, err := ParseKey(key)
		if err != nil {
			return
		}
		if !s.Valid() {
			t.Fatalf("ParseKey(%q) returned an invalid session", key)
		}
		if got := s.Key(); got != key {
			t.Fatalf("ParseKey(%q).Key() = %q", key, got)
		}
		s2, err := NewSession(s.Platform(), s.Kind(), s.ChatID(), s.ThreadID(), s.UserID())
		if err != nil || s2 != s {
			t.Fatalf("NewSession of parsed parts: %v, %v", s2, err)
		}
	})
}

func TestAudioFormat_Names(t *testing.T) {
	for _, f := range []AudioFormat{FormatOggOpus, FormatMP3} {
		back, ok := ParseAudioFormat(f.String())
		if !ok || back != f {
			t.Fatalf("ParseAudioFormat(%q) = %v, %v", f.String(), back, ok)
		}
	}
	if AudioFormat(0).String() != "invalid" {
		t.Fatal("zero AudioFormat must be invalid")
	}
}
