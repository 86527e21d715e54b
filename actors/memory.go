package actors

import (
	"context"
	"slices"
	"sync"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// Memory is a Persistence that keeps everything in process memory. It serves
// benchmarks that measure the runtime without storage, and tests; a daemon
// always runs on the SQLite store.
type Memory struct {
	mu       sync.Mutex
	sessions map[messages.Session]*memSession
}

type memSession struct {
	voice      messages.VoiceMode
	busy       messages.BusyPolicy
	history    []model.Message
	ids        []string // message id of each history entry ("" for turn output)
	deliveries int
}

// NewMemory returns an empty in-memory Persistence.
func NewMemory() *Memory { return &Memory{sessions: make(map[messages.Session]*memSession)} }

func (m *Memory) get(s messages.Session) *memSession {
	ms := m.sessions[s]
	if ms == nil {
		ms = &memSession{voice: messages.VoiceOn, busy: messages.Interrupt}
		m.sessions[s] = ms
	}
	return ms
}

// LoadSession implements Persistence.
func (m *Memory) LoadSession(_ context.Context, s messages.Session, limit int) (SessionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, ok := m.sessions[s]
	if !ok {
		return SessionState{Voice: messages.VoiceOn, Busy: messages.Interrupt}, nil
	}
	st := SessionState{Voice: ms.voice, Busy: ms.busy}
	h, ids := ms.history, ms.ids
	if limit > 0 && len(h) > limit {
		h, ids = h[len(h)-limit:], ids[len(ids)-limit:]
	}
	cut := len(h)
	for cut > 0 && h[cut-1].Role == "user" {
		cut--
	}
	st.History = append([]model.Message(nil), h[:cut]...)
	for i := cut; i < len(h); i++ {
		st.Pending = append(st.Pending, &messages.UserMessage{MessageId: ids[i], Text: h[i].Content})
	}
	return st, nil
}

// AppendUser implements Persistence.
func (m *Memory) AppendUser(_ context.Context, s messages.Session, um *messages.UserMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	if id := um.GetMessageId(); id != "" && slices.Contains(ms.ids, id) {
		return ErrDuplicate
	}
	ms.history = append(ms.history, model.Message{Role: "user", Content: um.GetText()})
	ms.ids = append(ms.ids, um.GetMessageId())
	return nil
}

// AppendTurn implements Persistence.
func (m *Memory) AppendTurn(_ context.Context, s messages.Session, msgs []model.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	ms.history = append(ms.history, msgs...)
	ms.ids = append(ms.ids, make([]string, len(msgs))...)
	return nil
}

// NewConversation implements Persistence.
func (m *Memory) NewConversation(_ context.Context, s messages.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	ms.history, ms.ids = nil, nil
	return nil
}

// SaveSettings implements Persistence.
func (m *Memory) SaveSettings(_ context.Context, s messages.Session, voice messages.VoiceMode, busy messages.BusyPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.get(s)
	ms.voice, ms.busy = voice, busy
	return nil
}

// RecordDelivery implements Persistence.
func (m *Memory) RecordDelivery(_ context.Context, s messages.Session, _ *messages.DeliveryReceipt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(s).deliveries++
	return nil
}
