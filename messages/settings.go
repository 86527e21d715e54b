package messages

// VoiceMode is a conversation's /voice setting: when replies are spoken.
type VoiceMode string

// Voice modes, as users type them after /voice.
const (
	// VoiceOn speaks the reply when the user spoke (the default).
	VoiceOn VoiceMode = "on"
	// VoiceOff never speaks automatically.
	VoiceOff VoiceMode = "off"
	// VoiceTTS speaks every reply.
	VoiceTTS VoiceMode = "tts"
)

// Valid reports whether m is a known voice mode.
func (m VoiceMode) Valid() bool { return m == VoiceOn || m == VoiceOff || m == VoiceTTS }

// String returns the mode as users type it.
func (m VoiceMode) String() string { return string(m) }

// BusyPolicy is what a message does to a conversation whose turn is still
// running.
type BusyPolicy string

// Busy policies, as users type them after /busy.
const (
	// Interrupt cancels the running turn and starts a new one with the
	// pending messages merged (the default).
	Interrupt BusyPolicy = "interrupt"
	// Queue runs the message as its own turn after the running one.
	Queue BusyPolicy = "queue"
	// Steer hands the message to the running turn, which shows it to the
	// model at its next step.
	Steer BusyPolicy = "steer"
)

// Valid reports whether p is a known busy policy.
func (p BusyPolicy) Valid() bool { return p == Interrupt || p == Queue || p == Steer }

// String returns the policy as users type it.
func (p BusyPolicy) String() string { return string(p) }
