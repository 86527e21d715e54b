// Package soak holds the kill -9 soak test of hermesd's durability (issue
// 10): the real hermesd binary, run as a subprocess on one HERMES_HOME
// against fake Telegram, Discord and model servers on 127.0.0.1, is killed
// with SIGKILL at random moments while chats send numbered messages, and
// restarted each time. The test then judges what the fake platforms
// received: every accepted message answered once, in its own chat, in
// order. The package has no code of its own; its test is the point.
//
//	go test ./soak                                 # the CI run, about 2 minutes
//	HERMESD_SOAK=10m go test ./soak -timeout 30m   # a longer soak
//	HERMESD_SOAK_SEED=1234 go test ./soak          # replay a run's schedule
//
// docs/testing.md describes the invariants and the knobs.
package soak
