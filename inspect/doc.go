// Package inspect shows what a running hermesd is doing: a live registry of
// its actors (the tree), a ring buffer of recent warnings and errors, and the
// JSON API and status page that present them to a person.
//
// The tree is fed by the same Props instrumentation the metrics use
// (actors.Deps.Instrument): an actor is registered when it handles Started
// and removed when it handles Stopped, so the registry holds exactly the live
// actors and does not grow with actors that came and went. Each entry carries
// the actor's kind, its session key (from its identity binding, never from a
// message), its parent, its state, the depth of its mailbox and when it
// started. No message content is stored anywhere in this package.
package inspect
