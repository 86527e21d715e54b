package actors

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Memory is a Persistence that keeps everything in process memory, with the
// same semantics as the SQLite store (inbox, outbox, conversations). It
// serves benchmarks that measure the runtime without storage, and tests; a
// daemon always runs on the SQLite store.
type Memory struct {
	mu       sync.Mutex
	seq      uint64 // inbox seq over all sessions
	sessions map[messages.Session]*memSession
	leases   map[string]*memLease // memory_lease.go
}

type memSession struct {
	voice   messages.VoiceMode
	busy    messages.BusyPolicy
	conv    int64
	history []memEntry
	inbox   []*memInput
	outbox  []*memReply
	ids     map[string]bool // accepted platform message ids
}

type memEntry struct {
	conv  int64
	msg   model.Message
	input uint64 // inbox seq of a user message
}

type memInput struct {
	m       *messages.UserMessage
	outcome Outcome
}

type memReply struct {
	d         *messages.Delivery
	delivered bool
}

// NewMemory returns an empty in-memory Persistence.
func NewMemory() *Memory { return &Memory{sessions: make(map[messages.Session]*memSession)} }

func (m *Memory) get(s messages.Session) *memSession {
	ms := m.sessions[s]
	if ms == nil {
		ms = &memSession{voice: messages.VoiceOn, busy: messages.Interrupt, conv: 1}
		m.sessions[s] = ms
	}
	return ms
}

// LoadSession implements Persistence.
func (m *Memory) LoadSession(_ context.Context, s messages.Session, limit int) (SessionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, ok := m.sessions[s]
	if !ok { // nothing stored: keep it that way (the idle-memory benchmark counts it)
		return SessionState{Voice: messages.VoiceOn, Busy: messages.Interrupt, Conversation: 1}, nil
	}
	st := SessionState{Voice: ms.voice, Busy: ms.busy, Conversation: ms.conv}
	pending := make(map[uint64]bool)
	for _, in := range ms.inbox {
		st.LastAccepted = max(st.LastAccepted, in.m.GetInboxSeq())
		if in.outcome == "" {
			pending[in.m.GetInboxSeq()] = true
			st.Pending = append(st.Pending, proto.Clone(in.m).(*messages.UserMessage))
		}
	}
	var h []model.Message
	for _, e := range ms.history {
		if e.conv == ms.conv && !pending[e.input] {
			h = append(h, e.msg)
		}
	}
	if limit > 0 && len(h) > limit {
		h = h[len(h)-limit:]
	}
	st.History = slices.Clone(h)
	for _, r := range ms.outbox {
		if !r.delivered {
			st.Unsent = append(st.Unsent, proto.Clone(r.d).(*messages.Delivery))
		}
	}
	return st, nil
}

// Accept implements Persistence.
func (m *Memory) Accept(_ context.Context, s messages.Session, um *messages.UserMessage) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	if id := um.GetMessageId(); id != "" {
		if ms.ids[id] {
			return 0, ErrDuplicate
		}
		if ms.ids == nil {
			ms.ids = make(map[string]bool)
		}
		ms.ids[id] = true
	}
	m.seq++
	c := proto.Clone(um).(*messages.UserMessage)
	c.InboxSeq = m.seq
	ms.inbox = append(ms.inbox, &memInput{m: c})
	ms.history = append(ms.history, memEntry{conv: ms.conv, msg: model.Message{Role: "user", Content: messages.HistoryText(um)}, input: m.seq})
	return m.seq, nil
}

// Settle implements Persistence; done runs before Settle returns.
func (m *Memory) Settle(s messages.Session, st Settlement, done func(error)) {
	m.mu.Lock()
	if err := m.checkFence(s.Key(), st.Fence); err != nil {
		m.mu.Unlock()
		if done != nil {
			done(err)
		}
		return
	}
	ms := m.get(s)
	for _, seq := range st.Inputs {
		for _, in := range ms.inbox {
			if in.m.GetInboxSeq() == seq && in.outcome == "" {
				in.outcome = st.Outcome
			}
		}
	}
	conv := st.Conversation
	if conv == 0 {
		conv = ms.conv
	}
	for _, h := range st.History {
		ms.history = append(ms.history, memEntry{conv: conv, msg: h})
	}
	for _, d := range st.Replies {
		d.Seq = uint64(len(ms.outbox) + 1)
		d.IdempotencyKey = s.Key() + "#" + strconv.FormatUint(d.Seq, 10)
		ms.outbox = append(ms.outbox, &memReply{d: proto.Clone(d).(*messages.Delivery)})
	}
	m.mu.Unlock()
	if done != nil {
		done(nil)
	}
}

// NewConversation implements Persistence.
func (m *Memory) NewConversation(_ context.Context, s messages.Session) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	ms.conv++
	return ms.conv, nil
}

// SaveSettings implements Persistence.
func (m *Memory) SaveSettings(ctx context.Context, s messages.Session, voice messages.VoiceMode, busy messages.BusyPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkFence(s.Key(), FenceOf(ctx)); err != nil {
		return err
	}
	ms := m.get(s)
	ms.voice, ms.busy = voice, busy
	return nil
}

// MarkDelivered implements Persistence.
func (m *Memory) MarkDelivered(_ context.Context, s messages.Session, r *messages.DeliveryReceipt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	if i := int(r.GetSeq()) - 1; i >= 0 && i < len(ms.outbox) {
		ms.outbox[i].delivered = true
		ms.outbox[i].d = nil // as the store drops the payload
	}
	return nil
}

// Delivered implements Persistence.
func (m *Memory) Delivered(_ context.Context, s messages.Session, seq uint64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, ok := m.sessions[s]
	if i := int(seq) - 1; ok && i >= 0 && i < len(ms.outbox) {
		return ms.outbox[i].delivered, nil
	}
	return false, nil
}

// Owed implements Persistence.
func (m *Memory) Owed(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type owing struct {
		key   string
		since uint64
	}
	var out []owing
	for s, ms := range m.sessions {
		since := uint64(0)
		for _, in := range ms.inbox {
			if in.outcome == "" {
				since = in.m.GetInboxSeq()
				break
			}
		}
		unsent := slices.ContainsFunc(ms.outbox, func(r *memReply) bool { return !r.delivered })
		if since > 0 || unsent {
			out = append(out, owing{s.Key(), since})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].since < out[j].since })
	keys := make([]string, len(out))
	for i, o := range out {
		keys[i] = o.key
	}
	return keys, nil
}

// Outcomes returns the outcome of every accepted message of s by message
// id ("" while pending), for tests.
func (m *Memory) Outcomes(s messages.Session) map[string]Outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Outcome)
	for _, in := range m.get(s).inbox {
		out[in.m.GetMessageId()] = in.outcome
	}
	return out
}
