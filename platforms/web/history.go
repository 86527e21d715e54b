package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// History reads one page of a conversation as a person reads it: user and
// assistant messages with text (no tool calls or results), strictly older
// than the message id before (0: from the newest), at most limit of them,
// oldest first, and whether older ones remain.
type History func(ctx context.Context, sessionKey string, before int64, limit int) (page []HistoryMessage, more bool, err error)

// HistoryMessage is one message of a chat's history.
type HistoryMessage struct {
	ID      int64
	Role    string
	Text    string
	Created time.Time
}

// historyEntry is a HistoryMessage as GET /api/chat/{id}/history shows it.
type historyEntry struct {
	ID      int64  `json:"id"`
	Role    string `json:"role"`
	Text    string `json:"text"`
	HTML    string `json:"html,omitempty"`
	Created string `json:"created"`
}

// historyPage is the answer: messages oldest first; before is the value to
// pass for the next (older) page, 0 when there is none.
type historyPage struct {
	Messages []historyEntry `json:"messages"`
	Before   int64          `json:"before,omitempty"`
}

// History page sizes.
const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 200
)

// handleHistory serves GET /api/chat/{id}/history?before=&limit=. The chat
// id names the session, exactly as for POST /api/chat and the event
// stream: the request reads web:dm:<id> and nothing else, whatever the
// query says.
func (a *Adapter) handleHistory(w http.ResponseWriter, r *http.Request) {
	s, err := Session(r.PathValue("id"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "bad_chat", err.Error())
		return
	}
	q := r.URL.Query()
	var before int64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			WriteError(w, http.StatusBadRequest, "bad_before", "before must be a message id ≥ 1 (the previous page's \"before\")")
			return
		}
		before = n
	}
	limit := defaultHistoryLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHistoryLimit {
			WriteError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit must be a number from 1 to %d", maxHistoryLimit))
			return
		}
		limit = n
	}
	if a.history == nil {
		WriteError(w, http.StatusNotImplemented, "no_history", "this hermesd keeps no history")
		return
	}
	msgs, more, err := a.history(r.Context(), s.Key(), before, limit)
	if err != nil {
		a.log.Warn("web history", "session", s.Key(), "err", err)
		WriteError(w, http.StatusServiceUnavailable, "store", "the history could not be read")
		return
	}
	out := historyPage{Messages: make([]historyEntry, 0, len(msgs))}
	for _, m := range msgs {
		e := historyEntry{ID: m.ID, Role: m.Role, Text: m.Text, Created: m.Created.UTC().Format(time.RFC3339)}
		if m.Role == "assistant" {
			e.HTML = a.md.render(m.Text)
		}
		out.Messages = append(out.Messages, e)
	}
	if more && len(msgs) > 0 {
		out.Before = msgs[0].ID
	}
	w.Header().Set("Cache-Control", "no-store")
	WriteJSON(w, http.StatusOK, out)
}
