package purge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/herod-archive/herod/archive/access"
)

// Ring-wide access rules ride on the purge orders: an Order whose Access
// is set is a rule (archive/access) signed by its issuer, kept in the
// same orders file, exchanged and flooded the same way, so a takedown
// given once reaches every member, those that join later included. Only
// an order from this node or a listed purge authority is taken (any
// other is refused and counted, Stats.Refused); of two orders for one
// rule ID the later one holds, and a Revoked one withdraws the rule (it
// stays in the book, so an older copy still travelling cannot bring the
// rule back).

// accessKeyPrefix starts the key of an access order (Order.key).
const accessKeyPrefix = "access:"

// accessMessage is what an access order's signature covers.
func accessMessage(o Order) []byte {
	rule, err := json.Marshal(o.Access)
	if err != nil { // a Rule always marshals; an empty message never verifies
		return nil
	}
	return []byte("herod-access-v1\n" + o.Peer + "\n" + o.Issuer + "\n" + o.Time.UTC().Format(time.RFC3339Nano) +
		"\n" + strconv.FormatBool(o.Revoked) + "\n" + string(rule))
}

// checkAccess is check for an access order: well formed, signed, not
// from the future, and from this node or a listed authority.
func checkAccess(o Order, v Verifier, self string, authorities map[string]bool, now time.Time, skew time.Duration) error {
	if o.Peer != "" {
		return fmt.Errorf("%w: an access order names no peer", ErrInvalid)
	}
	if err := o.Access.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Time.After(now.Add(skew)) {
		return fmt.Errorf("%w: issued in the future (%s)", ErrInvalid, o.Time)
	}
	if err := v.Verify(o.Issuer, Message(o), o.Sig); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Issuer != self && !authorities[o.Issuer] {
		return fmt.Errorf("%w: %s may not order access rules", ErrUnauthorized, o.Issuer)
	}
	return nil
}

// NewAccessOrder returns the order, signed by s, that puts r in force
// ring-wide, or, with revoke, withdraws it. Its times are kept in UTC.
func NewAccessOrder(s Signer, r access.Rule, revoke bool, now time.Time) (Order, error) {
	if err := r.Validate(); err != nil {
		return Order{}, fmt.Errorf("purge: access order: %w", err)
	}
	for _, t := range []*time.Time{&r.After, &r.Before, &r.Date} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	o := Order{Issuer: s.Peer(), Time: now.UTC(), Access: &r, Revoked: revoke}
	sig, err := s.Sign(Message(o))
	if err != nil {
		return Order{}, fmt.Errorf("purge: sign access order: %w", err)
	}
	o.Sig = sig
	return o, nil
}

// takeAccess keeps a checked access order if it is later than the one
// of its rule ID kept; it reports whether it did. Kept orders are
// written to the orders file first (synced), then Config.Ruled hears
// of the rules in force.
func (b *Book) takeAccess(o Order) bool {
	k := o.key()
	b.mu.Lock()
	old, have := b.orders[k]
	if have && !o.Time.After(old.Time) {
		b.mu.Unlock()
		return false
	}
	if !have && len(b.orders)+len(b.taking) >= MaxOrders {
		b.mu.Unlock()
		b.log.Warn("access order not kept: the book is full", "rule", o.Access.ID(), "orders", MaxOrders)
		return false
	}
	if err := appendRecord(b.cfg.Path, record{Order: o, Done: true}); err != nil {
		b.mu.Unlock()
		b.log.Warn("access order not kept", "rule", o.Access.ID(), "err", err)
		return false
	}
	b.orders[k] = o
	b.mu.Unlock()
	b.log.Info("took an access order", "rule", o.Access.ID(), "action", o.Access.Action, "revoked", o.Revoked, "issuer", o.Issuer)
	if b.cfg.Ruled != nil {
		b.cfg.Ruled(b.AccessRules())
	}
	if b.cfg.Taken != nil {
		b.cfg.Taken("")
	}
	return true
}

// AccessRules returns the ring-wide access rules in force: the kept
// access orders not revoked, in ID order.
func (b *Book) AccessRules() []access.Rule {
	b.mu.Lock()
	var ids []string
	byID := map[string]access.Rule{}
	for k, o := range b.orders {
		if o.Access != nil && !o.Revoked {
			ids = append(ids, k)
			byID[k] = *o.Access
		}
	}
	b.mu.Unlock()
	slices.Sort(ids)
	out := make([]access.Rule, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out
}

// IssueAccess signs, as this node, the order that puts r in force
// ring-wide (or withdraws it, revoke) and takes it: nodes that list this
// one as a purge authority take it too when it reaches them.
func (b *Book) IssueAccess(ctx context.Context, s Signer, r access.Rule, revoke bool) error {
	o, err := NewAccessOrder(s, r, revoke, b.cfg.Now())
	if err != nil {
		return err
	}
	if _, _, err := b.Take(ctx, o); err != nil {
		return err
	}
	return nil
}

// AccessRulesIn returns the ring-wide access rules in force in the
// orders file at path, as a Book opened on it would (a stopped node's:
// herod export from its data directory). A missing file holds none.
func AccessRulesIn(path string) ([]access.Rule, error) {
	recs, err := loadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("purge: orders: %w", err)
	}
	var out []access.Rule
	for _, r := range recs {
		if r.Access != nil && !r.Revoked {
			out = append(out, *r.Access)
		}
	}
	return out, nil
}
