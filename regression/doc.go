// Package regression holds hermesd's regression suite for the bug class it
// exists to kill: work done for a conversation reaching the wrong chat, or
// reaching it in the wrong format. Each test is named for the failure it
// guards (docs/identity.md maps them to the Python gateway's bugs) and runs
// the real daemon — actor tree, store, TTS actor, adapters and their client
// libraries — against fake Telegram, Discord, model and speech servers on
// 127.0.0.1. The package has no code of its own; its tests are the point.
package regression
