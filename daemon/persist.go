package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
	// Whatever an earlier incarnation of this session queued (a restart
	// after a panic) is committed before it is read.
	if err := p.st.Barrier(ctx); err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	rec, err := p.st.Session(ctx, key)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	// Read before Pending: a message accepted in between is pending then,
	// or has a higher seq; never both missing and counted as seen.
	last, err := p.st.LastAccepted(ctx, key)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	pending, err := p.st.Pending(ctx, key)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	unsent, err := p.st.Unsent(ctx, key)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	hist, err := p.st.History(ctx, key, limit)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load history %s: %w", key, err)
	}
	st := actors.SessionState{Voice: rec.VoiceMode, Busy: rec.BusyPolicy, Conversation: rec.Conversation, Unsent: unsent, LastAccepted: last}
	if st.Conversation == 0 {
		st.Conversation = 1
	}
	// Pending messages come back as inputs, not as history.
	rows := make(map[int64]bool, len(pending))
	for _, in := range pending {
		rows[in.Row] = true
		st.Pending = append(st.Pending, in.Message)
	}
	hist = slices.DeleteFunc(hist, func(m store.Message) bool { return rows[m.ID] })
	// A history window may start in the middle of a tool exchange; a tool
	// result without its call is rejected by OpenAI-compatible servers.
	start := 0
	for start < len(hist) && hist[start].Role == store.Tool {
		start++
	}
	st.History = make([]model.Message, 0, len(hist)-start)
	for _, m := range hist[start:] {
		mm, err := modelMessage(m)
		if err != nil {
			return actors.SessionState{}, fmt.Errorf("load history %s: %w", key, err)
		}
		st.History = append(st.History, mm)
	}
	return st, nil
}

func modelMessage(m store.Message) (model.Message, error) {
	mm := model.Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	if len(m.ToolCalls) > 0 {
		if err := json.Unmarshal(m.ToolCalls, &mm.ToolCalls); err != nil {
			return mm, fmt.Errorf("message %d: tool calls: %w", m.ID, err)
		}
	}
	return mm, nil
}

func (p persistence) Accept(ctx context.Context, s messages.Session, m *messages.UserMessage) (uint64, error) {
	seq, err := p.st.Accept(ctx, s.Key(), m)
	if errors.Is(err, store.ErrDuplicate) {
		return 0, fmt.Errorf("%w: %w", actors.ErrDuplicate, err)
	}
	return seq, err
}

func (p persistence) Settle(s messages.Session, st actors.Settlement, done func(error)) {
	hist := make([]store.Message, 0, len(st.History))
	for _, m := range st.History {
		sm := store.Message{Role: store.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				go done(fmt.Errorf("encode tool calls: %w", err))
				return
			}
			sm.ToolCalls = b
		}
		hist = append(hist, sm)
	}
	p.st.Settle(store.Settlement{Key: s.Key(), Conversation: st.Conversation, Inputs: st.Inputs,
		Outcome: store.Outcome(st.Outcome), History: hist, Replies: st.Replies, Fence: store.Fence(st.Fence)},
		func(err error) { done(fencedErr(err)) })
}

func (p persistence) NewConversation(ctx context.Context, s messages.Session) (int64, error) {
	return p.st.NewConversation(ctx, s.Key())
}

func (p persistence) SaveSettings(ctx context.Context, s messages.Session, v messages.VoiceMode, b messages.BusyPolicy) error {
	ctx = store.WithFence(ctx, store.Fence(actors.FenceOf(ctx)))
	if err := p.st.SetVoiceMode(ctx, s.Key(), v); err != nil {
		return fencedErr(err)
	}
	return fencedErr(p.st.SetBusyPolicy(ctx, s.Key(), b))
}

func (p persistence) MarkDelivered(ctx context.Context, s messages.Session, r *messages.DeliveryReceipt) error {
	return p.st.MarkDelivered(ctx, s.Key(), r.GetSeq(), r.GetMessageIds())
}

func (p persistence) Delivered(ctx context.Context, s messages.Session, seq uint64) (bool, error) {
	_, ok, err := p.st.Delivered(ctx, s.Key(), seq)
	return ok, err
}

func (p persistence) Owed(ctx context.Context) ([]string, error) { return p.st.Owed(ctx) }

// inboxDedup is the platform adapters' dedup store: the inbox's claim
// (store.Accept refuses a message id the session has, and the runtime
// answers such a redelivery with nothing new) is the durable one, made in the
// same transaction as the message itself. A second claim in the adapter
// would cost two more writes per message and protect nothing more: a
// redelivered update is at worst downloaded or transcribed again. Telegram's
// offset cursor stays in the store.
type inboxDedup struct{ *store.Store }

// MarkSeen reports every id as new.
func (inboxDedup) MarkSeen(context.Context, messages.Platform, string) (bool, error) {
	return true, nil
}
