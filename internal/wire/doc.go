// Package wire frames messages on a byte stream (a libp2p stream between
// two herod nodes): a uvarint length followed by that many bytes.
//
// Every reader is bounded: a frame longer than the limit the caller passes
// is refused with ErrTooLarge before any of it is buffered, so a hostile
// peer cannot make a node allocate more than the limit. JSON helpers encode
// one value per frame and reject trailing garbage.
//
// Functions here hold no state; concurrent use of one stream must be
// serialized by the caller. A ReplyBudget is the bytes a node's replies
// may hold at once, shared by the handlers given it.
package wire
