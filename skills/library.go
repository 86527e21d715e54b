// Package skills keeps the agent's skill documents: one Markdown file per
// skill in <dir>/<name>/SKILL.md (dir is HERMES_HOME/skills), with an
// optional YAML front matter giving its name and description. The files are
// the source of truth and a person may edit them at any time; a Library
// indexes them and notices such edits without a restart.
package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// FileName is the name of a skill's document inside its directory.
const FileName = "SKILL.md"

// Limits and defaults; each says why.
const (
	// DefaultPollInterval is how often the Library rescans the directory:
	// often enough that a hand edit shows up in the next turn, rarely
	// enough that a few stat calls cost nothing.
	DefaultPollInterval = 2 * time.Second
	// MaxSize bounds a SKILL.md written through the Library: a skill is
	// loaded into the model's context whole.
	MaxSize = 32 * 1024
	// MaxDescription bounds a description, in characters; descriptions of
	// all skills go into every system prompt.
	MaxDescription = 1024
	// maxRead bounds how much of a hand-written file is read.
	maxRead = 1 << 20
)

// Errors a Library returns, wrapped with the skill's name.
var (
	// ErrInvalidName is returned for a name outside [a-z0-9-]{1,64}.
	ErrInvalidName = errors.New("invalid skill name")
	// ErrNotFound is returned for a skill that does not exist.
	ErrNotFound = errors.New("no such skill")
	// ErrExists is returned by Create for a skill that already exists.
	ErrExists = errors.New("skill already exists")
	// ErrTooLarge is returned for a document over MaxSize (writes) or over
	// 1 MiB (reads of hand-written files).
	ErrTooLarge = errors.New("skill too large")
)

// ValidName reports whether name may name a skill: 1 to 64 of a-z, 0-9 and
// "-". Names are directory names, so this is also what makes path
// traversal impossible.
func ValidName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Skill is one entry of the index.
type Skill struct {
	Name        string
	Description string
	// Size is the size of SKILL.md in bytes.
	Size int64
	// Modified is SKILL.md's modification time.
	Modified time.Time
}

// Doc is a skill with its Markdown body (the file without front matter).
type Doc struct {
	Skill
	Body string
}

// Option configures Open.
type Option func(*options)

type options struct {
	poll time.Duration
	log  *slog.Logger
}

// WithPollInterval sets how often the Library rescans its directory. Zero
// starts no goroutine: then List rescans on every call instead.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.poll = d } }

// WithLogger sets the logger for files that cannot be read or parsed.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Library is the index of a skills directory. It is safe for concurrent use.
// A goroutine it owns rescans the directory every poll interval until Close.
type Library struct {
	dir  string
	poll time.Duration
	log  *slog.Logger

	// scan serializes rescans and writes, so a rescan that started before a
	// write cannot overwrite the index entry the write made.
	scan    sync.Mutex
	lastErr string // last rescan error logged, guarded by scan

	mu    sync.RWMutex
	index map[string]Skill

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Open creates dir if needed, indexes the skills in it and starts watching
// it. Close stops the watching.
func Open(dir string, opts ...Option) (*Library, error) {
	o := options{poll: DefaultPollInterval, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open skills: %w", err)
	}
	l := &Library{dir: dir, poll: o.poll, log: o.log.With("component", "skills"), index: map[string]Skill{}}
	if err := l.Reload(); err != nil {
		return nil, fmt.Errorf("open skills: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	if l.poll > 0 {
		l.wg.Add(1)
		go l.watch(ctx)
	}
	return l, nil
}

// Close stops the goroutine watching the directory and waits for it. It is
// idempotent; the Library stays readable (as of its last scan) and writable.
func (l *Library) Close() error {
	l.once.Do(func() {
		l.cancel()
		l.wg.Wait()
	})
	return nil
}

// Dir returns the skills directory.
func (l *Library) Dir() string { return l.dir }

func (l *Library) watch(ctx context.Context) {
	defer l.wg.Done()
	t := time.NewTicker(l.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = l.Reload() // logged by Reload
		}
	}
}

// List returns the skills, sorted by name.
func (l *Library) List() []Skill {
	if l.poll <= 0 {
		_ = l.Reload() // logged by Reload
	}
	l.mu.RLock()
	out := make([]Skill, 0, len(l.index))
	for _, s := range l.index {
		out = append(out, s)
	}
	l.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Reload rescans the directory now: new skill directories are added,
// removed ones dropped, and files whose size or modification time changed
// are parsed again. A SKILL.md that cannot be read is left out and logged;
// only a failure to list the directory itself is returned.
func (l *Library) Reload() error {
	l.scan.Lock()
	defer l.scan.Unlock()
	entries, err := os.ReadDir(l.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if msg := err.Error(); msg != l.lastErr {
			l.lastErr = msg
			l.log.Warn("rescan skills", "dir", l.dir, "err", err)
		}
		return fmt.Errorf("rescan skills: %w", err)
	}
	l.lastErr = ""
	l.mu.RLock()
	old := l.index
	l.mu.RUnlock()
	next := make(map[string]Skill, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !ValidName(name) {
			continue // temp files, dot directories, names a person got wrong
		}
		info, err := os.Stat(filepath.Join(l.dir, name, FileName))
		if err != nil || !info.Mode().IsRegular() {
			continue // a directory without SKILL.md (yet)
		}
		if s, ok := old[name]; ok && s.Size == info.Size() && s.Modified.Equal(info.ModTime()) {
			next[name] = s
			continue
		}
		d, err := l.load(name)
		if err != nil {
			l.log.Warn("skip skill", "skill", name, "err", err)
			continue
		}
		next[name] = d.Skill
	}
	l.mu.Lock()
	l.index = next
	l.mu.Unlock()
	return nil
}

// Read returns skill name as it is on disk now, and refreshes its index
// entry.
func (l *Library) Read(name string) (Doc, error) {
	if !ValidName(name) {
		return Doc{}, fmt.Errorf("read skill %q: %w", name, ErrInvalidName)
	}
	d, err := l.load(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			l.forget(name)
			return Doc{}, fmt.Errorf("read skill %q: %w", name, ErrNotFound)
		}
		return Doc{}, fmt.Errorf("read skill %q: %w", name, err)
	}
	l.remember(d.Skill)
	return d, nil
}

// load reads and parses one SKILL.md.
func (l *Library) load(name string) (Doc, error) {
	f, err := os.Open(filepath.Join(l.dir, name, FileName))
	if err != nil {
		return Doc{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Doc{}, err
	}
	if !info.Mode().IsRegular() {
		return Doc{}, fmt.Errorf("%s is not a regular file", FileName)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRead+1))
	if err != nil {
		return Doc{}, err
	}
	if len(data) > maxRead {
		return Doc{}, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, FileName, maxRead)
	}
	fm, body, err := SplitFrontMatter(string(data))
	if err != nil {
		return Doc{}, err
	}
	return Doc{
		Skill: Skill{Name: name, Description: describe(fm, body), Size: info.Size(), Modified: info.ModTime()},
		Body:  body,
	}, nil
}

func (l *Library) remember(s Skill) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]Skill, len(l.index)+1) // copy on write: Reload reads the old map unlocked
	for k, v := range l.index {
		m[k] = v
	}
	m[s.Name] = s
	l.index = m
}

func (l *Library) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.index[name]; !ok {
		return
	}
	m := make(map[string]Skill, len(l.index))
	for k, v := range l.index {
		if k != name {
			m[k] = v
		}
	}
	l.index = m
}
