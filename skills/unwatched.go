package skills

import (
	"log/slog"
)

// Unwatched returns a Library over dir that neither creates dir nor
// watches it: List rescans on every call, and the first write creates the
// directory. It suits the many small per-chat skill directories, most of
// which never hold a skill: opening one costs nothing and leaves nothing
// on disk. Close is a no-op.
func Unwatched(dir string, opts ...Option) *Library {
	o := options{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return &Library{dir: dir, poll: 0, log: o.log.With("component", "skills"), index: map[string]Skill{}, cancel: func() {}}
}
