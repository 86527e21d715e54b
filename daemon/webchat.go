package daemon

import (
	"context"

	"github.com/hermesd/hermesd/platforms/web"
	"github.com/hermesd/hermesd/stt"
)

// chatHistory is the web chat's view of the store: a page of what a person
// reads of one conversation (web.History).
func (d *Daemon) chatHistory(ctx context.Context, key string, before int64, limit int) ([]web.HistoryMessage, bool, error) {
	msgs, more, err := d.store.HistoryPage(ctx, key, before, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]web.HistoryMessage, len(msgs))
	for i, m := range msgs {
		out[i] = web.HistoryMessage{ID: m.ID, Role: m.Role.String(), Text: m.Content, Created: m.Created}
	}
	return out, more, nil
}

// webTranscriber is the web chat's speech-to-text for recorded voice
// messages: the configured provider, or nil (the page is told it has none).
func (d *Daemon) webTranscriber() web.Transcriber {
	if d.cfg.STTProvider != "openai" {
		return nil
	}
	return &stt.Client{BaseURL: d.cfg.STTBaseURL, APIKey: d.cfg.ModelAPIKey, Model: d.cfg.STTModel}
}
