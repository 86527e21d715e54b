package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermesd/hermesd/messages"
)

// Memory is one remembered fact, owned by a scope: a user on a platform
// (seen in their direct chats), a user within one shared conversation, or a
// single session.
type Memory struct {
	ID      int64
	Scope   string
	Content string
	Created time.Time
	Updated time.Time
}

// UserScope returns the memory scope of a user on a platform:
// "user:<platform>:<user id>".
func UserScope(p messages.Platform, userID string) string {
	return "user:" + string(p) + ":" + userID
}

// SessionScope returns the memory scope of one session: "session:<key>".
func SessionScope(key string) string { return "session:" + key }

// MemberScope returns the memory scope of a user within one shared
// conversation (a group, a topic, a thread): "member:<key>:<user id>".
// What a user saves there stays there; their own UserScope is for their
// direct chats.
func MemberScope(key, userID string) string { return "member:" + key + ":" + userID }

// validScope checks a scope has one of the shapes UserScope, MemberScope
// and SessionScope make, so a memory can never be stored without an owner.
func validScope(scope string) error {
	if rest, ok := strings.CutPrefix(scope, "session:"); ok {
		if _, err := messages.ParseKey(rest); err != nil {
			return fmt.Errorf("%w: scope %q: %w", ErrInvalid, scope, err)
		}
		return nil
	}
	if rest, ok := strings.CutPrefix(scope, "member:"); ok {
		i := strings.LastIndexByte(rest, ':')
		if i > 0 && messages.ValidChatID(rest[i+1:]) {
			if _, err := messages.ParseKey(rest[:i]); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%w: scope %q, want member:<key>:<user id>", ErrInvalid, scope)
	}
	if rest, ok := strings.CutPrefix(scope, "user:"); ok {
		p, user, ok := strings.Cut(rest, ":")
		if ok && p != "" && !strings.ContainsFunc(p, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) &&
			messages.ValidChatID(user) {
			return nil
		}
	}
	return fmt.Errorf("%w: scope %q, want user:<platform>:<id> or session:<key>", ErrInvalid, scope)
}

// AddMemory stores a new memory in scope and returns it.
func (s *Store) AddMemory(ctx context.Context, scope, content string) (Memory, error) {
	if err := validScope(scope); err != nil {
		return Memory{}, fmt.Errorf("add memory: %w", err)
	}
	if strings.TrimSpace(content) == "" {
		return Memory{}, fmt.Errorf("add memory: %w: empty content", ErrInvalid)
	}
	now := s.now()
	m := Memory{Scope: scope, Content: content, Created: fromMS(ms(now)), Updated: fromMS(ms(now))}
	err := s.write(ctx, 1, func(x *wtx) error {
		return x.queryRow(`INSERT INTO memories(scope, content, created, updated) VALUES (?, ?, ?, ?) RETURNING id`,
			[]any{&m.ID}, scope, content, ms(now), ms(now))
	})
	if err != nil {
		return Memory{}, fmt.Errorf("add memory to %s: %w", scope, err)
	}
	return m, nil
}

// ReplaceMemory replaces the content of memory id, which must belong to
// scope: a caller acting for one user or session cannot touch another's
// memories by guessing ids. ErrNotFound otherwise.
func (s *Store) ReplaceMemory(ctx context.Context, scope string, id int64, content string) error {
	if strings.TrimSpace(content) == "" {
		return fmt.Errorf("replace memory %d: %w: empty content", id, ErrInvalid)
	}
	now := ms(s.now())
	err := s.write(ctx, 1, func(x *wtx) error {
		n, err := x.changed(`UPDATE memories SET content = ?, updated = ? WHERE id = ? AND scope = ?`, content, now, id, scope)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("replace memory %d in %s: %w", id, scope, err)
	}
	return nil
}

// RemoveMemory deletes memory id, which must belong to scope (ErrNotFound
// otherwise).
func (s *Store) RemoveMemory(ctx context.Context, scope string, id int64) error {
	err := s.write(ctx, 1, func(x *wtx) error {
		n, err := x.changed(`DELETE FROM memories WHERE id = ? AND scope = ?`, id, scope)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("remove memory %d from %s: %w", id, scope, err)
	}
	return nil
}

// Memories returns the memories of the given scopes, oldest first. No scopes
// returns none: there is no "all memories" read.
func (s *Store) Memories(ctx context.Context, scopes ...string) ([]Memory, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	list, err := jsonText(scopes)
	if err != nil {
		return nil, fmt.Errorf("memories: %w", err)
	}
	rows, err := s.query(ctx, `SELECT id, scope, content, created, updated FROM memories
		WHERE scope IN (`+s.d.inList+`) ORDER BY id`, list)
	if err != nil {
		return nil, fmt.Errorf("memories of %v: %w", scopes, err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		var m Memory
		var created, updated int64
		if err := rows.Scan(&m.ID, &m.Scope, &m.Content, &created, &updated); err != nil {
			return nil, fmt.Errorf("memories of %v: %w", scopes, err)
		}
		m.Created, m.Updated = fromMS(created), fromMS(updated)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memories of %v: %w", scopes, err)
	}
	return out, nil
}
