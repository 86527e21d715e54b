package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hermesd/hermesd/actors"
	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
	"github.com/hermesd/hermesd/store"
)

// persistence is the actor tree's view of the SQLite store.
type persistence struct{ st *store.Store }

var _ actors.Persistence = persistence{}

func (p persistence) LoadSession(ctx context.Context, s messages.Session, limit int) (actors.SessionState, error) {
	key := s.Key()
	rec, err := p.st.Session(ctx, key)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	hist, err := p.st.History(ctx, key, limit)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load history %s: %w", key, err)
	}
	st := actors.SessionState{Voice: rec.VoiceMode, Busy: rec.BusyPolicy}
	cut := len(hist)
	for cut > 0 && hist[cut-1].Role == store.User {
		cut--
	}
	// A history window may start in the middle of a tool exchange; a tool
	// result without its call is rejected by OpenAI-compatible servers.
	start := 0
	for start < cut && hist[start].Role == store.Tool {
		start++
	}
	st.History = make([]model.Message, 0, cut-start)
	for _, m := range hist[start:cut] {
		mm := model.Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		if len(m.ToolCalls) > 0 {
			if err := json.Unmarshal(m.ToolCalls, &mm.ToolCalls); err != nil {
				return actors.SessionState{}, fmt.Errorf("load history %s: message %d: tool calls: %w", key, m.ID, err)
			}
		}
		st.History = append(st.History, mm)
	}
	for _, m := range hist[cut:] {
		st.Pending = append(st.Pending, &messages.UserMessage{MessageId: m.PlatformMessageID, Text: m.Content, ReceivedUnixMs: m.Created.UnixMilli()})
	}
	return st, nil
}

func (p persistence) AppendUser(ctx context.Context, s messages.Session, m *messages.UserMessage) error {
	err := p.st.Append(ctx, store.Message{SessionKey: s.Key(), Role: store.User, Content: m.GetText(), PlatformMessageID: m.GetMessageId(), Name: m.GetSenderId()})
	if errors.Is(err, store.ErrDuplicate) {
		return fmt.Errorf("%w: %w", actors.ErrDuplicate, err)
	}
	return err
}

func (p persistence) AppendTurn(ctx context.Context, s messages.Session, msgs []model.Message) error {
	out := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		sm := store.Message{SessionKey: s.Key(), Role: store.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return fmt.Errorf("encode tool calls: %w", err)
			}
			sm.ToolCalls = b
		}
		out = append(out, sm)
	}
	return p.st.Append(ctx, out...)
}

func (p persistence) NewConversation(ctx context.Context, s messages.Session) error {
	_, err := p.st.NewConversation(ctx, s.Key())
	return err
}

func (p persistence) SaveSettings(ctx context.Context, s messages.Session, v messages.VoiceMode, b messages.BusyPolicy) error {
	if err := p.st.SetVoiceMode(ctx, s.Key(), v); err != nil {
		return err
	}
	return p.st.SetBusyPolicy(ctx, s.Key(), b)
}

func (p persistence) RecordDelivery(ctx context.Context, s messages.Session, r *messages.DeliveryReceipt) error {
	return p.st.RecordDelivery(ctx, s.Key(), r.GetSeq(), r.GetMessageIds())
}
