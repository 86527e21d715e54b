package telegram

import (
	"context"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/keyed"
	"github.com/hermesd/hermesd/messages"
)

// update is one inbound update on its way to Inbound.
type update struct {
	id   int64
	recv time.Time
	sess messages.Session
	msg  *models.Message // nil when the update could not be decoded
	bad  error           // why it could not be decoded
	from int64           // sender, also known for undecodable updates
	// settle is called exactly once: done=true when the update needs no
	// more work (accepted, refused, skipped), false when it was abandoned at
	// shutdown and must come again.
	settle func(done bool)
}

// chatBacklog bounds the updates waiting for one conversation. Polling
// never comes near it (at most 100 updates past the watermark are visible);
// a webhook flood beyond it is answered 503, and Telegram retries.
const chatBacklog = 1000

// lane is one conversation's pending updates, as its worker sees them.
type lane = keyed.Lane[string, *update]

// newSequencer returns the queue that restores each conversation's order.
// Updates are queued by session key in update id order (polling pushes in
// order; a webhook may not), and one worker per conversation with updates
// waiting hands them on one at a time; different sessions run side by side,
// so a slow chat (a long transcription, a busy Inbound) delays only itself.
// After shutdown began, waiting updates are abandoned: they must come again.
func newSequencer(ctx context.Context, handle func(context.Context, *lane, *update)) *keyed.Queue[string, *update] {
	return keyed.New(ctx, handle, keyed.Options[string, *update]{
		Limit:  chatBacklog,
		Before: func(a, b *update) bool { return a.id < b.id },
		Drop:   func(u *update) { u.settle(false) },
	})
}
