package web

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/hermesd/hermesd/messages"
)

// mediaStore keeps recent voice replies in memory for /media/, bounded in
// bytes; the oldest go first. Names are random, so one chat cannot guess
// another's audio.
type mediaStore struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *mediaItem, oldest at the front
	items map[string]*list.Element
}

type mediaItem struct {
	name   string
	data   []byte
	format messages.AudioFormat
}

func newMediaStore(max int) *mediaStore {
	return &mediaStore{max: max, order: list.New(), items: make(map[string]*list.Element)}
}

func (m *mediaStore) put(data []byte, f messages.AudioFormat) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	name := hex.EncodeToString(b[:]) + f.Ext()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[name] = m.order.PushBack(&mediaItem{name: name, data: data, format: f})
	m.size += len(data)
	for m.size > m.max && m.order.Len() > 1 {
		old := m.order.Remove(m.order.Front()).(*mediaItem)
		delete(m.items, old.name)
		m.size -= len(old.data)
	}
	return name
}

func (m *mediaStore) get(name string) (*mediaItem, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[name]
	if !ok {
		return nil, false
	}
	return e.Value.(*mediaItem), true
}
