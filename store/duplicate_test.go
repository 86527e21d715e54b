package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestAppend_RefusesARedeliveredUserMessage: a platform that sends the same
// message again (after a crash) cannot store it twice, in this session;
// another session may use the same platform id.
func TestAppend_RefusesARedeliveredUserMessage(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := Message{SessionKey: "telegram:dm:42", Role: User, Content: "hi", PlatformMessageID: "7"}
	if err := st.Append(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, m); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second append: %v, want ErrDuplicate", err)
	}
	other := m
	other.SessionKey = "telegram:dm:43"
	if err := st.Append(ctx, other); err != nil {
		t.Fatalf("same id in another session: %v", err)
	}
	reply := Message{SessionKey: "telegram:dm:42", Role: Assistant, Content: "hello", PlatformMessageID: "7"}
	if err := st.Append(ctx, reply); err != nil {
		t.Fatalf("assistant message with that id: %v", err)
	}
	h, err := st.History(ctx, "telegram:dm:42", 10)
	if err != nil || len(h) != 2 {
		t.Fatalf("history %+v %v: want the message once and the reply", h, err)
	}
}
