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

var (
	_ actors.Persistence   = persistence{}
	_ actors.Conversations = persistence{}
)

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
	// The summary and what follows it; rows of pending inputs are left out
	// (they come back as inputs, not as history).
	sum, hist, err := p.st.ConversationContext(ctx, key, rec.Conversation, limit)
	if err != nil {
		return actors.SessionState{}, fmt.Errorf("load history %s: %w", key, err)
	}
	st := actors.SessionState{Voice: rec.VoiceMode, Busy: rec.BusyPolicy, Conversation: rec.Conversation, Unsent: unsent, LastAccepted: last,
		Summary: sum.Text}
	if st.Model, err = p.st.SessionModel(ctx, key); err != nil {
		return actors.SessionState{}, fmt.Errorf("load session %s: %w", key, err)
	}
	if st.Conversation == 0 {
		st.Conversation = 1
	}
	for _, in := range pending {
		st.Pending = append(st.Pending, in.Message)
	}
	hist = skipOrphanResults(hist)
	st.History = make([]model.Message, 0, len(hist))
	for _, m := range hist {
		mm, err := modelMessage(m)
		if err != nil {
			return actors.SessionState{}, fmt.Errorf("load history %s: %w", key, err)
		}
		st.History = append(st.History, mm)
	}
	return st, nil
}

// skipOrphanResults drops tool results at the start of a history window: a
// window may start in the middle of a tool exchange, and a tool result
// without its call is rejected by OpenAI-compatible servers.
func skipOrphanResults(hist []store.Message) []store.Message {
	start := 0
	for start < len(hist) && hist[start].Role == store.Tool {
		start++
	}
	return hist[start:]
}

func (p persistence) Context(ctx context.Context, s messages.Session, conv int64) (string, []actors.Entry, error) {
	sum, hist, err := p.st.ConversationContext(ctx, s.Key(), conv, 0)
	if err != nil {
		return "", nil, err
	}
	out := make([]actors.Entry, 0, len(hist))
	for _, m := range hist {
		mm, err := modelMessage(m)
		if err != nil {
			return "", nil, fmt.Errorf("context of %s: %w", s.Key(), err)
		}
		out = append(out, actors.Entry{ID: m.ID, Message: mm})
	}
	return sum.Text, out, nil
}

func (p persistence) Compact(s messages.Session, f actors.Fence, conv, upto int64, summary string, limit int, done func(actors.Loaded, error)) {
	p.st.CompactAsync(s.Key(), store.Fence(f), conv, upto, summary, limit, func(sum store.Summary, hist []store.Message, err error) {
		if err != nil {
			done(actors.Loaded{}, fencedErr(err))
			return
		}
		done(loaded(sum, hist))
	})
}

func (p persistence) Undo(s messages.Session, f actors.Fence, conv int64, dropUser bool, limit int, done func(int, actors.Loaded, error)) {
	p.st.UndoAsync(s.Key(), store.Fence(f), conv, dropUser, limit, func(n int, sum store.Summary, hist []store.Message, err error) {
		err = fencedErr(err)
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: %w", actors.ErrNothingToUndo, err)
		}
		if err != nil {
			done(0, actors.Loaded{}, err)
			return
		}
		l, err := loaded(sum, hist)
		done(n, l, err)
	})
}

// loaded converts a stored context for the session, as LoadSession does.
func loaded(sum store.Summary, hist []store.Message) (actors.Loaded, error) {
	l := actors.Loaded{Summary: sum.Text, History: make([]model.Message, 0, len(hist))}
	for _, m := range skipOrphanResults(hist) {
		mm, err := modelMessage(m)
		if err != nil {
			return actors.Loaded{}, err
		}
		l.History = append(l.History, mm)
	}
	return l, nil
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
	ctx = withStoreFence(ctx)
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

func (p persistence) List(ctx context.Context, s messages.Session) ([]actors.ConversationInfo, error) {
	list, err := p.st.Conversations(ctx, s.Key(), 0)
	if err != nil {
		return nil, err
	}
	out := make([]actors.ConversationInfo, len(list))
	for i, ci := range list {
		out[i] = actors.ConversationInfo{Number: ci.Number, Title: ci.Title, Opening: ci.Opening, First: ci.First, Last: ci.Last, Messages: ci.Messages}
	}
	return out, nil
}

func (p persistence) Title(ctx context.Context, s messages.Session, conv int64) (string, error) {
	return p.st.Title(ctx, s.Key(), conv)
}

func (p persistence) SetTitle(ctx context.Context, s messages.Session, conv int64, title string) error {
	return fencedErr(p.st.SetTitle(withStoreFence(ctx), s.Key(), conv, title))
}

func (p persistence) Resume(ctx context.Context, s messages.Session, conv int64, limit int) (actors.Loaded, error) {
	if err := fencedErr(p.st.ResumeConversation(withStoreFence(ctx), s.Key(), conv)); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return actors.Loaded{}, fmt.Errorf("%w: %w", actors.ErrNoConversation, err)
		}
		return actors.Loaded{}, err
	}
	sum, hist, err := p.st.ConversationContext(ctx, s.Key(), conv, limit)
	if err != nil {
		return actors.Loaded{}, err
	}
	return loaded(sum, hist)
}

// withStoreFence carries the session's fence (actors.WithFence) to the store
// (store.WithFence), which checks it inside the write.
func withStoreFence(ctx context.Context) context.Context {
	return store.WithFence(ctx, store.Fence(actors.FenceOf(ctx)))
}
