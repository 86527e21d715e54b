package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// PDFTool is the program that extracts a PDF's text: poppler's pdftotext.
const PDFTool = "pdftotext"

// ErrNoPDFTool says pdftotext is not installed, so PDFs cannot be read.
var ErrNoPDFTool = errors.New("reading PDFs needs poppler's pdftotext, which is not installed")

// errTooSlow says extraction ran out of its time.
var errTooSlow = errors.New("reading it took too long")

// PDFToolPath returns where pdftotext is, or ErrNoPDFTool. hermesd doctor
// reports it.
func PDFToolPath() (string, error) {
	p, err := exec.LookPath(PDFTool)
	if err != nil {
		return "", ErrNoPDFTool
	}
	return p, nil
}

// extractPDF runs pdftotext on the stored file at path, bounded by timeout
// and by output size (maxChars characters are at most 4×maxChars bytes of
// UTF-8; the rest is not kept).
func extractPDF(ctx context.Context, path string, maxChars int, timeout time.Duration) (string, error) {
	tool, err := PDFToolPath()
	if err != nil {
		return "", err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &capped{max: 4*maxChars + 4}
	var stderr capped
	stderr.max = 512
	// -layout is not used: reading order matters more to a model than
	// columns; "-" sends the text to stdout.
	cmd := exec.CommandContext(ctx, tool, "-enc", "UTF-8", "-nopgbrk", "-q", path, "-")
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if parent.Err() != nil {
			return "", fmt.Errorf("pdftotext: %w", parent.Err())
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("pdftotext: no result within %s: %w", timeout, errTooSlow)
		}
		msg := strings.TrimSpace(stderr.buf.String())
		return "", fmt.Errorf("pdftotext: %w (%s): %w", err, msg, ErrBadDocument)
	}
	return out.buf.String(), nil
}

// capped is an io.Writer that keeps the first max bytes and discards the
// rest (still reporting success, so the tool is not killed by a broken pipe
// halfway through a long PDF).
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
