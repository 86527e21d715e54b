package metrics

import "sync"

// other is the label value that stands for every value past a label's
// bound, so no input can grow the number of series without limit.
const other = "other"

// bounded keeps one label's values to a known set, or to the first max
// distinct values seen; anything else is reported as "other". Labels fed
// from outside hermesd (a tool name the model made up, an error type) stay
// bounded this way, whatever arrives.
type bounded struct {
	allowed map[string]bool // fixed set; nil means "first max seen"
	max     int

	mu   sync.RWMutex
	seen map[string]bool
}

// fixed returns a label that accepts only values.
func fixed(values ...string) *bounded {
	b := &bounded{allowed: make(map[string]bool, len(values))}
	for _, v := range values {
		b.allowed[v] = true
	}
	return b
}

// firstN returns a label that accepts the first n distinct values.
func firstN(n int) *bounded {
	return &bounded{max: n, seen: make(map[string]bool)}
}

// value returns v if the label admits it, else "other".
func (b *bounded) value(v string) string {
	if b.allowed != nil {
		if b.allowed[v] {
			return v
		}
		return other
	}
	b.mu.RLock()
	ok, n := b.seen[v], len(b.seen)
	b.mu.RUnlock()
	if ok {
		return v
	}
	if n >= b.max {
		return other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[v] {
		return v
	}
	if len(b.seen) >= b.max {
		return other
	}
	b.seen[v] = true
	return v
}
