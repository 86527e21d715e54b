package messages

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// HistoryText is what a conversation keeps of m for the turns after the one
// that answers it: its text, then each document's extracted text and a line
// for each photo or other file. Without it a follow-up question about a PDF
// would reach a model that no longer has the PDF. Voice and audio add
// nothing: their transcript is the text already. Images themselves are not
// kept for later turns, only the line that says one was sent.
func HistoryText(m *UserMessage) string {
	var b strings.Builder
	b.WriteString(m.GetText())
	for _, a := range m.GetAttachments() {
		kind := a.GetKind()
		if kind == "voice" || kind == "audio" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch {
		case kind == "document" && a.GetText() != "" && a.GetProblem() == "":
			b.WriteString(DocumentText(a))
		case kind == "photo":
			fmt.Fprintf(&b, "[the user sent a photo %q]", a.GetName())
		default:
			fmt.Fprintf(&b, "[the user sent a file %q, %s]", a.GetName(), a.GetMimeType())
		}
	}
	return b.String()
}

// DocumentText is a document's extracted text as the model reads it, in
// the turn that carries it and in later ones: delimited, so that its text
// is not taken for the user's own words or for instructions, and saying
// where it was cut.
func DocumentText(a *Attachment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[document: %s]\n%s\n[end of document: %s]", a.GetName(), a.GetText(), a.GetName())
	if a.GetTruncated() {
		fmt.Fprintf(&b, "\n[the document is longer: only its first %d characters are shown above]", utf8.RuneCountInString(a.GetText()))
	}
	return b.String()
}
