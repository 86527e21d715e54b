package main

import (
	"fmt"
	"io"

	"github.com/hermesd/hermesd/config"
	"github.com/hermesd/hermesd/media"
)

// doctorMedia says whether PDFs can be read (pdftotext is optional: without
// it a PDF is refused with a clear note) and whether photos reach the model.
func doctorMedia(w io.Writer, c config.Media) {
	if p, err := media.PDFToolPath(); err == nil {
		fmt.Fprintf(w, "✓ pdftotext (poppler-utils) at %s: PDFs sent in a chat are read\n", p)
	} else {
		fmt.Fprintln(w, "• pdftotext is missing: PDFs sent in a chat are refused with a note (apt-get install poppler-utils)")
	}
	if c.Vision {
		fmt.Fprintln(w, "• photos reach the model as images (HERMES_MODEL_VISION=on)")
	} else {
		fmt.Fprintln(w, "• photos are described, not shown, to the model (HERMES_MODEL_VISION=off)")
	}
}
