package discordtest

import (
	"fmt"
	"net/http"
	"slices"
)

// stored is a message the fake created: where, its content now, and the
// Seq of the post that created it.
type stored struct {
	channel string
	content string
	seq     int
	deleted bool
}

// FailEdits makes the next n edits in channel answer f.
func (s *Server) FailEdits(channel string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.editFailures[channel] = append(s.editFailures[channel], f)
	}
}

// editRefusalLocked decides whether edit p fails: a queued failure, an
// unknown or deleted message (10008), or content over 2000 characters.
// s.mu must be held.
func (s *Server) editRefusalLocked(p Post) *Failure {
	if q := s.editFailures[p.ChannelID]; len(q) > 0 {
		f := q[0]
		s.editFailures[p.ChannelID] = q[1:]
		return &f
	}
	m := s.messages[p.MessageID]
	if m == nil || m.deleted || m.channel != p.ChannelID {
		return &Failure{Status: http.StatusNotFound, Code: 10008, Message: "Unknown Message"}
	}
	if n := len([]rune(p.Content)); n > 2000 {
		return &Failure{Status: http.StatusBadRequest, Code: 50035,
			Message: fmt.Sprintf("Invalid Form Body: content of %d characters, limit 2000", n)}
	}
	if p.Content == "" {
		return &Failure{Status: http.StatusBadRequest, Code: 50006, Message: "Cannot send an empty message"}
	}
	return nil
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	ch, id := r.PathValue("id"), r.PathValue("mid")
	s.mu.Lock()
	m := s.messages[id]
	ok := m != nil && !m.deleted && m.channel == ch
	if ok {
		m.deleted = true
		s.deletes = append(s.deletes, id)
	}
	s.notifyLocked()
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Visible returns what channel shows now: the current content of every
// message created there and not deleted, in the order they were posted.
func (s *Server) Visible(channel string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ms []*stored
	for _, m := range s.messages {
		if m.channel == channel && !m.deleted {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *stored) int { return a.seq - b.seq })
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.content
	}
	return out
}

// Edits returns the edit attempts in channel (refused ones included), in
// order, with when they arrived.
func (s *Server) Edits(channel string) []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	for _, p := range s.attempts {
		if p.Method == http.MethodPatch && p.ChannelID == channel {
			out = append(out, p)
		}
	}
	return out
}

// Deletes returns the ids of the messages deleted, in order.
func (s *Server) Deletes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deletes...)
}

// Content returns the current content of message id (after edits), and
// whether it exists and was not deleted.
func (s *Server) Content(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.deleted {
		return "", false
	}
	return m.content, true
}
