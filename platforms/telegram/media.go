package telegram

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/retry"
)

// largestPhoto is the biggest size of a photo whose declared bytes fit
// limit (a size that does not say its bytes is taken at its word; the
// download is capped anyway). ok is false when every size is too large.
func largestPhoto(sizes []models.PhotoSize, limit int64) (best models.PhotoSize, ok bool) {
	for _, ph := range sizes {
		if int64(ph.FileSize) > limit {
			continue
		}
		if !ok || ph.Width*ph.Height > best.Width*best.Height {
			best, ok = ph, true
		}
	}
	return best, ok
}

// ingest downloads a photo or document within the media cap and has the
// ingester store it and read it into att. What cannot be fetched or read is
// said in att.Problem (the message still goes on: its text, and the note
// that the file was not read); only the context's end is an error.
func (p *pipeline) ingest(ctx context.Context, ing *media.Ingester, att *messages.Attachment, fileID string, size int64, log *slog.Logger) error {
	limit := ing.MaxBytes()
	if size > limit {
		log.Info("telegram file over the media limit", "bytes", size, "limit", limit)
		ing.TooLarge(att, size)
		return nil
	}
	var data []byte
	var err error
	back := retry.NewBackoff(300*time.Millisecond, 3*time.Second)
	for try := 0; try < 3; try++ {
		data, err = p.fetchFile(ctx, fileID, limit)
		if err == nil || errors.Is(err, errTooLarge) || ctx.Err() != nil {
			break
		}
		if kind, _ := classify(ctx, err); kind != failTransient && kind != failUncertain {
			break
		}
		if back.Wait(ctx) != nil {
			break
		}
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errTooLarge):
		ing.TooLarge(att, max(size, limit+1))
		return nil
	case err != nil:
		p.a.noteError(err)
		log.Warn("telegram file download failed", "err", err)
		att.Problem = "I could not download it from Telegram; please send it again"
		return nil
	}
	return ing.Ingest(ctx, att, data)
}
