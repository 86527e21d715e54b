package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hermesd/hermesd/store"
)

func TestMemories_CRUD(t *testing.T) { forEachBackend(t, testMemories_CRUD) }

func testMemories_CRUD(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	path := newDB(t)
	s := mustOpen(t, path)
	alice := store.UserScope("telegram", "1")
	bob := store.UserScope("telegram", "2")
	chat := store.SessionScope("telegram:group:-5:u1")

	a1, err := s.AddMemory(ctx, alice, "likes tea")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMemory(ctx, bob, "likes coffee"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMemory(ctx, chat, "project: hermes"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceMemory(ctx, alice, a1.ID, "likes green tea"); err != nil {
		t.Fatal(err)
	}
	// Bob's side cannot touch Alice's memory by its id.
	if err := s.ReplaceMemory(ctx, bob, a1.ID, "hacked"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReplaceMemory from another scope = %v, want ErrNotFound", err)
	}
	if err := s.RemoveMemory(ctx, bob, a1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RemoveMemory from another scope = %v, want ErrNotFound", err)
	}
	mustClose(t, s)

	s = mustOpen(t, path)
	got, err := s.Memories(ctx, alice, chat)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Content != "likes green tea" || got[1].Content != "project: hermes" {
		t.Fatalf("Memories(alice, chat) = %+v", got)
	}
	if err := s.RemoveMemory(ctx, alice, a1.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Memories(ctx, alice); len(got) != 0 {
		t.Fatalf("after remove: %+v", got)
	}
	if got, _ := s.Memories(ctx); len(got) != 0 {
		t.Fatalf("Memories() with no scope returned %d memories", len(got))
	}
	for _, bad := range []string{"", "user:telegram", "user::1", "session:nope", "global"} {
		if _, err := s.AddMemory(ctx, bad, "x"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("AddMemory(scope %q) = %v, want ErrInvalid", bad, err)
		}
	}
}
