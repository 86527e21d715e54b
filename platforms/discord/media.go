package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/hermesd/hermesd/media"
	"github.com/hermesd/hermesd/messages"
)

// ingestAttachments downloads the images and documents of m (within the
// media cap) and has the ingester store and read them into um's
// attachments, which describeAttachments listed in the same order. What
// cannot be fetched or read is said in the attachment's Problem; only the
// context's end is an error.
func (a *Adapter) ingestAttachments(ctx context.Context, log *slog.Logger, m *discordgo.Message, um *messages.UserMessage) error {
	ing := a.deps.Media
	if ing == nil {
		return nil
	}
	i := 0
	for _, att := range m.Attachments {
		if att == nil {
			continue
		}
		if i >= len(um.Attachments) {
			break
		}
		desc := um.Attachments[i]
		i++
		if !media.Wants(desc.GetKind(), desc.GetName(), desc.GetMimeType()) {
			continue
		}
		if size := int64(att.Size); size > ing.MaxBytes() {
			log.Info("discord attachment over the media limit", "bytes", size, "limit", ing.MaxBytes())
			ing.TooLarge(desc, size)
			continue
		}
		data, err := a.download(ctx, att.URL, ing.MaxBytes())
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errTooLarge):
			ing.TooLarge(desc, ing.MaxBytes()+1)
			continue
		case err != nil:
			log.Warn("download attachment", "err", err)
			desc.Problem = "I could not download it from Discord; please send it again"
			continue
		}
		if err := ing.Ingest(ctx, desc, data); err != nil {
			return err
		}
	}
	return nil
}

// download fetches an attachment from Discord's CDN (no token
// needed), refusing more than limit bytes whatever the message declared.
func (a *Adapter) download(ctx context.Context, url string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("discord: download attachment: %w", err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord: download attachment: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discord: download attachment: HTTP %s", resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("discord: download attachment: %w (%d bytes)", errTooLarge, resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("discord: download attachment: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("discord: download attachment: %w (over %d bytes)", errTooLarge, limit)
	}
	return data, nil
}
