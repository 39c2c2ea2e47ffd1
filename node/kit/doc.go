// Package kit is the one place through which a herod node answers
// another node's stream: every node protocol handler is registered with
// Kit.Handle, which applies, in this order and for every protocol alike,
//
//  1. panic containment: a handler that panics resets its stream, is
//     counted (Stats.Panics) and logged with its stack; the node goes on;
//  2. the trust boundary: a stream from a peer that is not a verified
//     ring member is reset before a byte of it is read (Config.Gate);
//  3. a cap on the handlers of the protocol running at once
//     (Spec.MaxActive), and on those of one member (Spec.MaxPerPeer,
//     half of MaxActive by default, so that no member holds them all): a
//     stream over either waits for a slot until its deadline, then is
//     reset and counted (Stats.Busy);
//  4. a stream deadline (Spec.Deadline) and a context that ends with it
//     and with the node (Config.Base);
//  5. size limits declared with the protocol: no frame longer than
//     Spec.MaxFrame, no more than Spec.MaxRequest bytes read from the
//     stream in all; a request that breaks one, or does not parse, is
//     counted as a bad frame (Config.BadFrame) and its stream reset;
//  6. role accounting: a member's request outside its role is reported
//     through Request.Refuse (Config.RefuseRole).
//
// So the memory one protocol's requests hold at once is bounded by
// MaxActive × MaxRequest plus what each handler builds from them (which
// the handler bounds: decompression goes through wire.ReadAll), whatever
// peers send.
//
// Handlers written for the kit take a Request; Raw adapts a handler that
// still reads the stream itself (its own checks then run again behind
// the kit's).
//
// A session protocol (Spec.Session) serves one request after another on
// a stream, each through steps 2–6 again, for the client side's Pool,
// which keeps a few streams to each member open between exchanges
// (Pool.Exchange): a small request then costs no stream setup. A session
// stream waits at most SessionIdle for its next request, holding no
// slot, and one member keeps at most MaxIdleSessions of a protocol
// waiting.
//
// Concurrency: a Kit and a Pool are safe for concurrent use; Handle may
// be called at any time, each protocol once.
package kit
