package audio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// MissingToolError reports a command-line tool that is not installed, naming
// the Debian package that provides it, so the fix is in the message.
type MissingToolError struct {
	Tool    string // the binary, e.g. "lame"
	Package string // the apt package, e.g. "lame"
}

// Error says what is missing and the command that installs it.
func (e *MissingToolError) Error() string {
	return fmt.Sprintf("%s not found in PATH (install it: apt-get install %s)", e.Tool, e.Package)
}

// stderrLimit bounds how much of a tool's stderr an error quotes.
const stderrLimit = 512

// RunTool runs path with args, feeding stdin and returning stdout. It never
// goes through a shell. pkg names the apt package for the missing-binary
// error. A failing tool's error carries the tail of its stderr.
func RunTool(ctx context.Context, path, pkg string, args []string, stdin []byte) ([]byte, error) {
	bin, err := exec.LookPath(path)
	if err != nil {
		return nil, &MissingToolError{Tool: path, Package: pkg}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", path, ctx.Err())
		}
		msg := strings.TrimSpace(errb.String())
		if len(msg) > stderrLimit {
			msg = "…" + msg[len(msg)-stderrLimit:]
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return nil, fmt.Errorf("%s: %w: %s", path, err, msg)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out.Bytes(), nil
}
