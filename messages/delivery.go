package messages

// SessionScoped marks a Delivery as meaningless without the identity of the
// conversation it goes to: an outbox refuses one that arrives without it.
func (*Delivery) SessionScoped() {}

// AnswersMessage reports whether d answers the inbound message with id msgID.
func (d *Delivery) AnswersMessage(msgID string) bool {
	for _, id := range d.GetAnswers() {
		if id == msgID {
			return true
		}
	}
	return false
}

// SessionScoped marks a Draft as meaningless without the identity of the
// conversation it is shown in: an outbox refuses one that arrives without it.
func (*Draft) SessionScoped() {}
