package store

// Backend is the typed contract handlers call: keys with their batches,
// admin and policies (Store), and streams with their admin and policies
// (StreamStore), kept in one database. The conformance suite
// (storetest.RunAll) holds every implementation to all of it at once.
//
// A storage backend does not implement Backend by hand. It implements the
// narrow Engine (engine.go): every key write through Apply (a Command
// decided by Apply: Claim, Complete, Reject, ExtendLease, DeleteRecord),
// batches through ApplyBatch, every stream write, parks included, through
// ApplyStream (a StreamCommand decided by ApplyStreamParked), and the
// reads. Its fast paths (SQLite's one statement per command, PostgreSQL's
// group commit, Pebble's batches) live inside those methods. Backend is
// then derived once, by NewAPI; the backends embed that API so that their
// own *Store is a Backend too.
//
// The decorators the server stacks on a backend (stack.Build: the replay
// cache, the observer of spans and metrics, the claim-wait notification)
// wrap the Engine, not Backend, so a new write command passes through
// them with no edit: each sees it through Apply or ApplyStream and decides
// by its Op (names for spans, metric labels, retries) or by its type. The
// safety the explicit pass-throughs once gave is kept by the compiler and
// by tests:
//
//   - a new command must name its Op (Command and StreamCommand require
//     it), and must be listed in Commands or StreamCommands, whose test in
//     each decorator (storetest.CommandsDecided) fails until the decorator
//     decides it (claimwait.Wakes, the cache's switch, the observer's op);
//   - a new Engine method makes each decorator's assertion
//     `var _ store.Engine = (*X)(nil)` fail to compile if it falls in
//     Writer, which decorators write out, and otherwise fails each
//     decorator's storetest.EngineMethodsDecided test until that decorator
//     says what it does with it.
type Backend interface {
	Store
	StreamStore
}
