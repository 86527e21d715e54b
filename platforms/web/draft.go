package web

import (
	"context"
	"fmt"

	"github.com/hermesd/hermesd/messages"
)

// DraftEvent is a reply still being written, as the event stream shows it
// (event "draft"): the whole text so far, not a piece. Drafts of one id
// arrive in order; the reply event whose "draft" names the id replaces it.
type DraftEvent struct {
	// ID is stable for one reply.
	ID string `json:"id"`
	// Text is the answer so far (Markdown, possibly cut mid-word).
	Text string `json:"text"`
	// HTML is Text rendered and sanitized, as for a reply.
	HTML string `json:"html,omitempty"`
	// Tool names the tool(s) being run, if any.
	Tool string `json:"tool,omitempty"`
	// Answers lists the ids of the messages the reply will answer.
	Answers []string `json:"answers,omitempty"`
	// Cancelled says the reply will not come (/stop): remove the draft.
	Cancelled bool `json:"cancelled,omitempty"`
}

// Draft implements platforms.Drafter: it shows the text so far on the
// chat's event streams. A reader too slow for drafts misses some; it still
// gets every reply.
func (a *Adapter) Draft(_ context.Context, s messages.Session, d *messages.Draft) error {
	if s.Platform() != messages.Web {
		return fmt.Errorf("web: draft for %s session %s", s.Platform(), s.Key())
	}
	a.mu.Lock()
	listening := len(a.subs[s.ChatID()]) > 0
	a.mu.Unlock()
	if !listening {
		// Rendered Markdown for nobody (a chat used through POST only):
		// drafts come many times a second, and each renders the whole text.
		return nil
	}
	ev := Event{draft: &DraftEvent{ID: d.GetId(), Text: d.GetText(), HTML: a.md.render(d.GetText()), Tool: d.GetTool(), Answers: d.GetAnswers(), Cancelled: d.GetCancelled()}}
	a.mu.Lock()
	for sub := range a.subs[s.ChatID()] {
		sub.push(ev)
	}
	a.mu.Unlock()
	return nil
}
