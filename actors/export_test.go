package actors

// What the runtime's benchmarks (package actors_test) need beyond the
// exported API.

// Activate has key's router shard spawn its session, with no message for it
// (the session loads its state and does nothing else).
func (rt *Runtime) Activate(key string) {
	rt.sys.Root.Send(rt.routerOf(key), &resumeSession{key: key})
}

// WaitDeliveries waits until every outbox worker is done.
func (rt *Runtime) WaitDeliveries() { rt.waitSending() }
