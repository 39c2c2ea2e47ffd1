package query

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/herod-archive/herod/ring"
)

// maxMembers bounds the real nodes a ring-wide query asks. The URLs of one
// host are spread over the whole ring by SHA-1 of the URL, so a host or
// prefix query must ask every real node; above this many the query asks
// the first maxMembers found clockwise from this node and says it is
// partial.
const maxMembers = 1024

// ErrPartial is wrapped by the error of a ring-wide query that could not
// ask every real node: the ring has more than maxMembers, or a member did
// not answer. The results of the members that did answer are still given.
var ErrPartial = errors.New("node: partial answer")

// Members enumerates the real nodes of the ring, this one first, then the
// others in the clockwise order of the walk. It walks the ring with
// ring.Successors, which follows successor lists from the owner of a key
// until it wraps around or has found k real nodes. The walk starts at this
// node's first virtual server; if it breaks (a node on the way does not
// answer) it is retried from the next virtual server, and the nodes of all
// walks are merged, so a single unreachable node rarely hides the others.
//
// The returned error wraps ErrPartial when the list may be incomplete: the
// ring has more than maxMembers real nodes, or every walk broke. The list
// is never empty: it holds at least this node.
func (svc *Service) Members(ctx context.Context) ([]ring.Contact, error) {
	self := svc.Self
	out := []ring.Contact{self}
	seen := map[string]bool{self.Peer: true}
	var errs []error
	complete := false
	for _, v := range svc.Ring.Vnodes() {
		nodes, err := svc.Ring.Successors(ctx, v.ID, maxMembers+1)
		for _, x := range nodes {
			if !seen[x.Peer] && x.Peer != "" {
				seen[x.Peer] = true
				out = append(out, x.Contact)
			}
		}
		if err == nil {
			complete = true
			break
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case len(out) > maxMembers:
		out = out[:maxMembers]
		return out, fmt.Errorf("ring members: %w: more than %d real nodes, asking the first %d", ErrPartial, maxMembers, maxMembers)
	case !complete && len(errs) > 0:
		return out, fmt.Errorf("ring members: %w: walk broke: %w", ErrPartial, errors.Join(errs...))
	case !complete:
		return out, fmt.Errorf("ring members: %w: no virtual servers", ErrPartial)
	}
	return out, nil
}

// eachMember runs fn once per ring member (Members), queryFanout at a
// time, fn's calls under one mutex once they return (so they may append
// to shared results), and returns the members' errors, the listing's
// first.
func (svc *Service) eachMember(ctx context.Context, fn func(m ring.Contact) (func(), error)) []error {
	ms, merr := svc.Members(ctx)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, queryFanout)
	)
	if merr != nil {
		errs = append(errs, merr)
	}
	for _, m := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			merge, err := fn(m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("member %s: %w", m.Addr, err))
				return
			}
			merge()
		}()
	}
	wg.Wait()
	return errs
}
