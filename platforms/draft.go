package platforms

import (
	"context"
	"strings"

	"github.com/hermesd/hermesd/messages"
)

// Drafter is implemented by adapters that can show a reply while it is being
// written (a streamed answer): a Telegram draft or an edited message, an
// edited Discord message, a draft event on the web chat's stream.
//
// The outbox calls Draft on the same per-session sender as Send, so a draft
// never overtakes the final reply, and it may skip drafts that a newer one of
// the same id replaced while they waited. The final Delivery names the draft
// in DraftId: Send then turns the draft into the reply (edits it, or replaces
// it) instead of leaving a second message. A draft with Cancelled set takes
// the draft down: its reply will not come.
//
// Draft is best effort: an error is logged and the stream goes on; only the
// final Send must succeed. An adapter paces drafts to the platform's limits
// and skips a draft whose visible text did not change.
type Drafter interface {
	Draft(ctx context.Context, s messages.Session, d *messages.Draft) error
}

// DraftText is what a platform without its own tool indicator shows for d:
// the text so far, then a line naming the tool being run.
func DraftText(d *messages.Draft) string {
	text := strings.TrimRight(d.GetText(), " \t\n")
	if tool := d.GetTool(); tool != "" {
		if text != "" {
			text += "\n\n"
		}
		text += "⚙️ running " + tool + "…"
	}
	return text
}
