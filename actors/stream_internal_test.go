package actors

import (
	"testing"

	"github.com/hermesd/hermesd/messages"
)

// A turn run again for the same accepted inputs (after a crash) streams
// into the same draft; an interrupt's merged turn, or inputs never
// accepted, get a draft of their own.
func TestDraftID_StableAcrossRunsOfTheSameInputs(t *testing.T) {
	in := func(seqs ...uint64) []*messages.UserMessage {
		var out []*messages.UserMessage
		for _, s := range seqs {
			out = append(out, &messages.UserMessage{InboxSeq: s})
		}
		return out
	}
	if a, b := draftID(in(7), 3), draftID(in(7), 41); a != b {
		t.Errorf("the same input after a restart: %q then %q", a, b)
	}
	if a, b := draftID(in(7), 3), draftID(in(7, 8), 4); a == b {
		t.Errorf("an interrupt's merged turn reused the draft %q", a)
	}
	if a, b := draftID(in(0), 3), draftID(in(0), 3); a == b {
		t.Errorf("unaccepted inputs share the draft %q", a)
	}
}
