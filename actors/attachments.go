package actors

import (
	"fmt"
	"strings"

	"github.com/hermesd/hermesd/messages"
	"github.com/hermesd/hermesd/model"
)

// visionFor reports whether the chat's model is given images as content
// parts: the catalog's vision flag for that model, or HERMES_MODEL_VISION,
// which answers for every model (and for a setup without a catalog).
func (rt *Runtime) visionFor(modelName string) bool {
	if info, ok := rt.ModelInfo(modelName); ok {
		return info.Vision || rt.cfg.Vision
	}
	return rt.cfg.Vision
}

// noticeNoVision is what the user is told, once per session, when a photo
// reaches a model that cannot see.
const noticeNoVision = "🖼️ This chat's model cannot see images: it only knows that you sent one. (The owner can mark a model vision: true in config.yaml, or set HERMES_MODEL_VISION=on.)"

// writeAttachment renders one attachment for the model, after the message's
// text: a line that describes it and, for a document, its extracted text.
// vision says whether the photo itself goes along as an image part.
func writeAttachment(b *strings.Builder, a *messages.Attachment, vision bool) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	switch {
	case a.GetProblem() != "":
		fmt.Fprintf(b, "[attachment: %s %q, %s, %d bytes — not read: %s]", a.GetKind(), a.GetName(), a.GetMimeType(), a.GetSize(), a.GetProblem())
	case a.GetKind() == "document" && a.GetText() != "":
		b.WriteString(messages.DocumentText(a))
	case a.GetKind() == "photo" && a.GetSha256() != "" && !vision:
		fmt.Fprintf(b, "[attachment: photo %q, %s, %d bytes — this model cannot see images; the user has been told]", a.GetName(), a.GetMimeType(), a.GetSize())
	default:
		fmt.Fprintf(b, "[attachment: %s %q, %s, %d bytes", a.GetKind(), a.GetName(), a.GetMimeType(), a.GetSize())
		if a.GetDurationSecs() > 0 {
			fmt.Fprintf(b, ", %.1f s", a.GetDurationSecs())
		}
		b.WriteByte(']')
	}
}

// withImages adds the stored photos of m to msg as image parts when the
// model can see them. A photo that cannot be read back is described instead.
func (t *turn) withImages(m *messages.UserMessage, msg model.Message) model.Message {
	if !t.vision || t.rt.media == nil {
		return msg
	}
	for _, a := range m.GetAttachments() {
		if a.GetKind() != "photo" || a.GetSha256() == "" || a.GetProblem() != "" {
			continue
		}
		// A local file of a few MB at most, read once per turn: the turn may
		// wait on I/O (the session never does).
		data, err := t.rt.media.Get(a.GetSha256())
		if err != nil {
			t.rt.log.Warn("turn: stored image unreadable", "sha256", a.GetSha256(), "err", err)
			msg.Content += fmt.Sprintf("\n[the image %q could not be loaded]", a.GetName())
			continue
		}
		msg.Images = append(msg.Images, model.Image{MIME: a.GetMimeType(), Data: data})
	}
	return msg
}

// attachmentNotices are what the user is told about the attachments of
// inputs before the answer: files that could not be read, documents cut
// short, and (once per session, when noticeVision) that the model cannot
// see images. It reports whether the vision notice was given.
func attachmentNotices(inputs []*messages.UserMessage, vision, noticeVision bool) ([]string, bool) {
	var out []string
	gaveVision := false
	for _, m := range inputs {
		for _, a := range m.GetAttachments() {
			switch {
			case a.GetProblem() != "":
				out = append(out, fmt.Sprintf("⚠️ I could not read “%s”: %s.", a.GetName(), a.GetProblem()))
			case a.GetTruncated():
				out = append(out, fmt.Sprintf("✂️ “%s” is long: I read only its first %d characters.", a.GetName(), len([]rune(a.GetText()))))
			case a.GetKind() == "photo" && a.GetSha256() != "" && !vision && noticeVision && !gaveVision:
				out = append(out, noticeNoVision)
				gaveVision = true
			}
		}
	}
	return out, gaveVision
}

// withNotices puts the notices before the reply.
func withNotices(notices []string, reply string) string {
	if len(notices) == 0 {
		return reply
	}
	return strings.Join(notices, "\n") + "\n\n" + reply
}
