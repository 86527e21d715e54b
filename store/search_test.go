package store_test

import (
	"context"
	"testing"
)

func TestSearch(t *testing.T) { forEachBackend(t, testSearch) }

func testSearch(t *testing.T, newDB func(testing.TB) string) {
	ctx := context.Background()
	s := mustOpen(t, newDB(t))
	const key, other = "telegram:dm:1", "telegram:dm:2"
	mustAppend(t, s, key, "the deploy failed on Tuesday", "Café opens at nine", "ПРИВЕТ from the école")
	if _, err := s.NewConversation(ctx, key); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, key, "remember the deploy key rotation")
	mustAppend(t, s, other, "deploy secrets of someone else")

	cases := []struct {
		query string
		want  int
	}{
		{"deploy", 2},            // both conversations of this session, not the other session
		{"DEPLOY tuesday", 1},    // every word must match, case-insensitive
		{"cafe", 1},              // diacritics folded
		{`"deploy`, 2},           // unbalanced quote
		{`deploy*`, 2},           // * is not a prefix operator here
		{`NEAR(deploy key`, 0},   // FTS syntax is plain text: "near deploy" is no phrase here
		{`rotation) key:`, 1},    // punctuation around words is ignored
		{`deploy AND OR NOT`, 0}, // operators are words, and no message has them
		{`key" OR "x`, 0},        // no injection through quotes
		{`* ( ) " ^ :`, 0},       // nothing searchable at all
		{"", 0},                  // empty
		{"someone", 0},           // another session's words
		{"CAFÉ", 1},              // accents folded in the query too, whatever the case
		{"привет", 1},            // case folded beyond ASCII
		{"ÉCOLE", 1},
	}
	for _, c := range cases {
		got, err := s.Search(ctx, key, c.query, 10)
		if err != nil {
			t.Fatalf("Search(%q): %v", c.query, err)
		}
		if len(got) != c.want {
			t.Errorf("Search(%q) = %d results %q, want %d", c.query, len(got), contents(got), c.want)
		}
		for _, m := range got {
			if m.SessionKey != key {
				t.Errorf("Search(%q) returned a message of %s", c.query, m.SessionKey)
			}
		}
	}
	if _, err := s.Search(ctx, "bad key", "x", 1); err == nil {
		t.Fatal("Search with an invalid key succeeded")
	}
}

func TestSearch_Limit(t *testing.T) { forEachBackend(t, testSearch_Limit) }

func testSearch_Limit(t *testing.T, newDB func(testing.TB) string) {
	s := mustOpen(t, newDB(t))
	const key = "web:dm:z"
	mustAppend(t, s, key, "alpha one", "alpha two", "alpha three")
	got, err := s.Search(context.Background(), key, "alpha", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Search(limit 2) returned %d", len(got))
	}
}
