package tools_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermesd/hermesd/store"
	"github.com/hermesd/hermesd/tools"
)

type searchList struct {
	Results []struct{ Role, Time, Snippet string }
}

func TestSessionSearch_OnlyThisChat(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	when := time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)
	err := st.Append(ctx,
		store.Message{SessionKey: keyA, Role: store.User, Content: "the deploy failed on Tuesday", Created: when},
		store.Message{SessionKey: keyA, Role: store.Assistant, Content: "I will check the deploy logs", Created: when.Add(time.Minute)},
		store.Message{SessionKey: keyA, Role: store.Tool, ToolCallID: "call_1", Name: "session_search", Content: `{"results":[{"snippet":"deploy"}]}`},
		store.Message{SessionKey: keyB, Role: store.User, Content: "deploy secrets of another chat"},
	)
	if err != nil {
		t.Fatal(err)
	}
	search := tools.SessionSearch(st)

	got := decodeResult[searchList](t, mustCall(t, search, newEnv(keyA, "100"), `{"query":"deploy"}`))
	if len(got.Results) != 2 {
		t.Fatalf("A finds %+v, want its user and assistant messages only", got.Results)
	}
	roles := map[string]string{}
	for _, r := range got.Results {
		roles[r.Role] = r.Snippet
		if strings.Contains(r.Snippet, "another chat") {
			t.Errorf("A's search returned B's message %q", r.Snippet)
		}
	}
	if roles["user"] != "the deploy failed on Tuesday" || roles["assistant"] != "I will check the deploy logs" {
		t.Errorf("matches = %+v", got.Results)
	}
	for _, r := range got.Results {
		if r.Role == "user" && r.Time != "2026-02-01T08:30:00Z" {
			t.Errorf("user match time = %q, want when it was sent", r.Time)
		}
	}

	// B sees only its own; the arguments cannot name another chat.
	got = decodeResult[searchList](t, mustCall(t, search, newEnv(keyB, "7"), `{"query":"deploy","session_key":"`+keyA+`"}`))
	if len(got.Results) != 1 || !strings.Contains(got.Results[0].Snippet, "another chat") {
		t.Errorf("B finds %+v, want only its own message", got.Results)
	}
	got = decodeResult[searchList](t, mustCall(t, search, newEnv(keyA, "100"), `{"query":"deploy","limit":1}`))
	if len(got.Results) != 1 {
		t.Errorf("limit 1 returned %d matches", len(got.Results))
	}
	if got = decodeResult[searchList](t, mustCall(t, search, newEnv(keyA, "100"), `{"query":"quantum"}`)); len(got.Results) != 0 {
		t.Errorf("no match returned %+v", got.Results)
	}
	if _, err := call(t, search, newEnv(keyA, "100"), `{"query":"  "}`); err == nil {
		t.Error("an empty query succeeded")
	}
}

// A long message is cut to a snippet around the words found, and the whole
// result stays small.
func TestSessionSearch_SnippetsAreBounded(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	long := strings.Repeat("filler words here ", 100) + "the NEEDLE is here " + strings.Repeat("more filler ", 100)
	var msgs []store.Message
	for range 25 {
		msgs = append(msgs, store.Message{SessionKey: keyA, Role: store.User, Content: long})
	}
	if err := st.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	out := mustCall(t, tools.SessionSearch(st), newEnv(keyA, "100"), `{"query":"needle","limit":100}`)
	got := decodeResult[searchList](t, out)
	if len(got.Results) != tools.MaxSearchLimit {
		t.Errorf("%d matches, want the cap of %d", len(got.Results), tools.MaxSearchLimit)
	}
	if len(out) > tools.MaxSearchResult {
		t.Errorf("result is %d bytes, over %d", len(out), tools.MaxSearchResult)
	}
	s := got.Results[0].Snippet
	if !strings.Contains(s, "NEEDLE") || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") ||
		utf8.RuneCountInString(s) > tools.SearchSnippetChars+2 {
		t.Errorf("snippet = %q (%d chars)", s, utf8.RuneCountInString(s))
	}
}
