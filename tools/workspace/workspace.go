// Package workspace gives each conversation a directory of its own,
// HERMES_HOME/workspaces/<session key>, and the file tools that work in it:
// read_file, write_file, edit_file and list_files. Which directory is used
// comes from the tool call's binding (tools.Env.Session), never from the
// model's arguments, and every access goes through an os.Root opened on
// that directory, so neither "..", an absolute path nor a symlink can reach
// outside it.
package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hermesd/hermesd/tools"
)

// Limits of the file tools: results go into the model's context, and a
// workspace lives on the operator's disk.
const (
	// MaxReadChars bounds what read_file returns.
	MaxReadChars = 50000
	// MaxFileBytes bounds a file written or edited.
	MaxFileBytes = 4 << 20
	// MaxListEntries bounds what list_files returns.
	MaxListEntries = 500
)

// Workspaces are the per-conversation directories under one base directory.
type Workspaces struct {
	base string
}

// New returns the workspaces under base (HERMES_HOME/workspaces); the
// directory is created on first use.
func New(base string) *Workspaces { return &Workspaces{base: base} }

// Dir returns the directory of the conversation with this session key.
func (w *Workspaces) Dir(key string) string { return filepath.Join(w.base, key) }

// open opens the calling conversation's workspace as an os.Root.
func (w *Workspaces) open(env tools.Env) (*os.Root, error) {
	s := env.Session()
	if !s.Valid() {
		return nil, errors.New("this call is not bound to a conversation")
	}
	key := s.Key()
	// Keys are [A-Za-z0-9_:-] by construction; this is a second lock.
	if key == "" || strings.ContainsAny(key, `/\.`) {
		return nil, fmt.Errorf("session key %q cannot name a directory", key)
	}
	dir := w.Dir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return r, nil
}

// Tools returns read_file, write_file, edit_file and list_files.
func (w *Workspaces) Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "read_file",
			Description: "Read a text file from this chat's workspace. Paths are relative to the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"File path relative to the workspace."}},"required":["path"]}`),
			Run: w.withRoot(readFile),
		},
		{
			Name:        "write_file",
			Description: "Create or overwrite a text file in this chat's workspace; parent directories are created.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"File path relative to the workspace."},` +
				`"content":{"type":"string","description":"The whole new content of the file."}},"required":["path","content"]}`),
			Run: w.withRoot(writeFile),
		},
		{
			Name: "edit_file",
			Description: "Replace exact text in a file of this chat's workspace. old_string must occur exactly once " +
				"unless replace_all is true.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"File path relative to the workspace."},` +
				`"old_string":{"type":"string","description":"The exact text to replace."},` +
				`"new_string":{"type":"string","description":"The replacement text."},` +
				`"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)."}},` +
				`"required":["path","old_string","new_string"]}`),
			Run: w.withRoot(editFile),
		},
		{
			Name:        "list_files",
			Description: "List the files of this chat's workspace (or of one directory in it), with sizes.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"Directory relative to the workspace (default: the whole workspace)."}}}`),
			Run: w.withRoot(listFiles),
		},
	}
}

type fileArgs struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// withRoot decodes the arguments, cleans the path and opens the caller's
// workspace around run.
func (w *Workspaces) withRoot(run func(ctx context.Context, r *os.Root, a fileArgs) (string, error)) func(context.Context, tools.Env, json.RawMessage) (string, error) {
	return func(ctx context.Context, env tools.Env, raw json.RawMessage) (string, error) {
		var a fileArgs
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return "", fmt.Errorf("%w: %v", tools.ErrBadArguments, err)
		}
		r, err := w.open(env)
		if err != nil {
			return "", err
		}
		defer r.Close()
		return run(ctx, r, a)
	}
}

// clean checks a model-given path: relative, no "..", no NUL. os.Root would
// refuse an escape anyway; refusing it here gives the model a clear reason.
func clean(p string, dirOK bool) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" || p == "." || p == "/" {
		if dirOK {
			return ".", nil
		}
		return "", fmt.Errorf("%w: path is empty", tools.ErrBadArguments)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: path contains NUL", tools.ErrBadArguments)
	}
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: path %q must be relative to the workspace", tools.ErrBadArguments, p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: path %q leaves the workspace", tools.ErrBadArguments, p)
		}
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// escapeErr turns os.Root's refusal into a short message.
func escapeErr(op, p string, err error) error {
	if strings.Contains(err.Error(), "escapes") {
		return fmt.Errorf("%s %s: the path leaves the workspace", op, p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: no such file in the workspace", op, p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %v", op, p, pe.Err)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

func readFile(_ context.Context, r *os.Root, a fileArgs) (string, error) {
	p, err := clean(a.Path, false)
	if err != nil {
		return "", err
	}
	f, err := r.Open(p)
	if err != nil {
		return "", escapeErr("read", p, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", fmt.Errorf("read %s: is a directory (use list_files)", p)
	}
	// Read a little more than can be shown, to know whether to say so.
	b, err := io.ReadAll(io.LimitReader(f, 4*MaxReadChars+4))
	if err != nil {
		return "", escapeErr("read", p, err)
	}
	if bytes.IndexByte(b, 0) >= 0 || (!utf8.Valid(b) && len(b) < 4*MaxReadChars) {
		return "", fmt.Errorf("read %s: not a text file", p)
	}
	s := strings.ToValidUTF8(string(b), "")
	if n := utf8.RuneCountInString(s); n > MaxReadChars || len(b) == 4*MaxReadChars+4 {
		rs := []rune(s)
		return string(rs[:min(MaxReadChars, len(rs))]) + fmt.Sprintf("\n[… truncated after %d characters]", MaxReadChars), nil
	}
	return s, nil
}

func writeFile(_ context.Context, r *os.Root, a fileArgs) (string, error) {
	p, err := clean(a.Path, false)
	if err != nil {
		return "", err
	}
	if len(a.Content) > MaxFileBytes {
		return "", fmt.Errorf("%w: content is %d bytes, the limit is %d", tools.ErrBadArguments, len(a.Content), MaxFileBytes)
	}
	if dir := path.Dir(p); dir != "." {
		if err := r.MkdirAll(dir, 0o700); err != nil {
			return "", escapeErr("write", p, err)
		}
	}
	if err := r.WriteFile(p, []byte(a.Content), 0o600); err != nil {
		return "", escapeErr("write", p, err)
	}
	return fmt.Sprintf("wrote %s (%d bytes)", p, len(a.Content)), nil
}

func editFile(_ context.Context, r *os.Root, a fileArgs) (string, error) {
	p, err := clean(a.Path, false)
	if err != nil {
		return "", err
	}
	if a.OldString == "" {
		return "", fmt.Errorf("%w: old_string is empty", tools.ErrBadArguments)
	}
	b, err := r.ReadFile(p)
	if err != nil {
		return "", escapeErr("edit", p, err)
	}
	s := string(b)
	n := strings.Count(s, a.OldString)
	switch {
	case n == 0:
		return "", fmt.Errorf("edit %s: old_string not found (it must match exactly, whitespace included)", p)
	case n > 1 && !a.ReplaceAll:
		return "", fmt.Errorf("edit %s: old_string occurs %d times; add context to make it unique or set replace_all", p, n)
	}
	if !a.ReplaceAll {
		n = 1
	}
	out := strings.Replace(s, a.OldString, a.NewString, n)
	if len(out) > MaxFileBytes {
		return "", fmt.Errorf("edit %s: the result would be %d bytes, the limit is %d", p, len(out), MaxFileBytes)
	}
	if err := r.WriteFile(p, []byte(out), 0o600); err != nil {
		return "", escapeErr("edit", p, err)
	}
	return fmt.Sprintf("edited %s: %d replacement(s)", p, n), nil
}

func listFiles(_ context.Context, r *os.Root, a fileArgs) (string, error) {
	p, err := clean(a.Path, true)
	if err != nil {
		return "", err
	}
	var lines []string
	more := false
	err = fs.WalkDir(r.FS(), p, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == p && d.IsDir() {
			return nil
		}
		if len(lines) == MaxListEntries {
			more = true
			return fs.SkipAll
		}
		switch {
		case d.IsDir():
			lines = append(lines, name+"/")
		case d.Type()&fs.ModeSymlink != 0:
			lines = append(lines, name+" (symlink)")
		default:
			info, ierr := d.Info()
			size := int64(0)
			if ierr == nil {
				size = info.Size()
			}
			lines = append(lines, fmt.Sprintf("%s (%d bytes)", name, size))
		}
		return nil
	})
	if err != nil {
		return "", escapeErr("list", p, err)
	}
	if len(lines) == 0 {
		return "(the workspace is empty)", nil
	}
	if more {
		lines = append(lines, fmt.Sprintf("[… more than %d entries; list a subdirectory]", MaxListEntries))
	}
	return strings.Join(lines, "\n"), nil
}
