package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Create writes a new skill. It fails with ErrExists if the skill exists,
// so a model cannot overwrite a skill by accident; Update replaces one.
func (l *Library) Create(name, description, body string) (Skill, error) {
	return l.write(name, description, body, true)
}

// Update replaces the description and body of an existing skill (ErrNotFound
// if there is none). Keys of its front matter other than name and
// description are not kept.
func (l *Library) Update(name, description, body string) (Skill, error) {
	return l.write(name, description, body, false)
}

// write renders and atomically replaces <dir>/<name>/SKILL.md: a reader,
// person or Library, sees the old file or the new one, never half of it.
func (l *Library) write(name, description, body string, create bool) (Skill, error) {
	verb := "update"
	if create {
		verb = "create"
	}
	if !ValidName(name) {
		return Skill{}, fmt.Errorf("%s skill %q: %w: use 1 to 64 of a-z, 0-9 and -", verb, name, ErrInvalidName)
	}
	if n := len([]rune(oneLine(description))); n > MaxDescription {
		return Skill{}, fmt.Errorf("%s skill %q: %w: description of %d characters, at most %d", verb, name, ErrTooLarge, n, MaxDescription)
	}
	data, err := render(name, description, body)
	if err != nil {
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, err)
	}
	if len(data) > MaxSize {
		return Skill{}, fmt.Errorf("%s skill %q: %w: %d bytes, at most %d", verb, name, ErrTooLarge, len(data), MaxSize)
	}

	l.scan.Lock()
	defer l.scan.Unlock()
	dir := filepath.Join(l.dir, name)
	final := filepath.Join(dir, FileName)
	_, err = os.Stat(final)
	switch {
	case create && err == nil:
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, ErrExists)
	case !create && errors.Is(err, fs.ErrNotExist):
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, ErrNotFound)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, err)
	}
	if err := writeAtomic(final, data); err != nil {
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, err)
	}
	info, err := os.Stat(final)
	if err != nil {
		return Skill{}, fmt.Errorf("%s skill %q: %w", verb, name, err)
	}
	fm, rest, _ := SplitFrontMatter(string(data))
	s := Skill{Name: name, Description: describe(fm, rest), Size: info.Size(), Modified: info.ModTime()}
	l.remember(s)
	l.log.Info("skill saved", "skill", name, "action", verb, "bytes", len(data))
	return s, nil
}

// writeAtomic writes data to a temporary file beside path, syncs it and
// renames it over path.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Persist the rename itself; not every platform can sync a directory.
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
