package render

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// MaxAge is how old a delivered record's capture time may be: a
// renderer delivers what it just rendered, so a member cannot pass off
// back-dated records as renders.
const MaxAge = time.Hour

// RenderSpec is the render protocol, served by a node with the role:
// one request, answered when the page's records reached their owners.
func (s *Service) RenderSpec() kit.Spec {
	return kit.Spec{ID: RenderProtocol, Handle: s.handleRender, MaxFrame: maxRequest,
		Deadline: s.cfg.Wait, MaxActive: 4 * s.cfg.Concurrency}
}

// DeliverSpec is the delivery protocol, served by every node: records
// rendered by a member with the role, for URLs this node owns.
func (s *Service) DeliverSpec() kit.Spec {
	frame := int(s.cfg.MaxBody) + recordSlack
	return kit.Spec{ID: DeliverProtocol, Handle: s.handleDeliver, MaxFrame: frame,
		MaxRequest: int64(maxRecords) * int64(frame), Deadline: 2 * time.Minute, MaxActive: 8}
}

// handleRender renders the page a member asks for.
func (s *Service) handleRender(ctx context.Context, q *kit.Request) error {
	var r renderRequest
	if err := q.ReadJSON(maxRequest, &r); err != nil {
		return err
	}
	u, err := canon.Canonical(r.URL)
	if err != nil || u != r.URL {
		return fmt.Errorf("%w: render of a URL not in canonical form", kit.ErrBadFrame)
	}
	var rep renderReply
	if s.cfg.Capturer == nil {
		rep.Err = "this node does not render pages"
		return q.Reply(rep)
	}
	// A member asks for the pages it owns (its crawler's), not for
	// anyone's: the browser is not an open fetcher.
	if o, err := s.cfg.Owner(ctx, id.OfString(u)); err != nil || o.Peer != q.Member.Peer {
		if err == nil {
			err = fmt.Errorf("%w: a render of a page owned by %s", ErrRole, o.Addr)
			q.Refuse(err)
		}
		return q.Reply(renderReply{Err: err.Error()})
	}
	if rep, err = s.renderHere(ctx, u); err != nil {
		rep = renderReply{Err: err.Error()}
	} else {
		s.rendered.Add(1)
	}
	return q.Reply(rep)
}

// ask has member c render pageURL.
func (s *Service) ask(ctx context.Context, c ring.Contact, pageURL string) (renderReply, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Wait)
	defer cancel()
	st, err := s.cfg.Open(ctx, c, RenderProtocol)
	if err != nil {
		return renderReply{}, err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(s.cfg.Wait))
	if err := wire.WriteJSON(st, renderRequest{URL: pageURL}); err != nil {
		_ = st.Reset()
		return renderReply{}, fmt.Errorf("render request: %w", err)
	}
	_ = st.CloseWrite()
	var rep renderReply
	if err := wire.ReadJSON(bufio.NewReader(st), maxReply, &rep); err != nil {
		_ = st.Reset()
		return renderReply{}, fmt.Errorf("render reply: %w", err)
	}
	return rep, nil
}

// DeliverTo sends the stored records of vs to their owner c over
// DeliverProtocol and returns the names of those c stored; an error
// says why some or all were not.
func (s *Service) DeliverTo(ctx context.Context, c ring.Contact, vs []archive.Version) ([]string, error) {
	st, err := s.cfg.Open(ctx, c, DeliverProtocol)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(2 * time.Minute))
	var sent []archive.Version
	var datas [][]byte
	for _, v := range vs {
		data, err := s.cfg.Store.ReadFile(ctx, v.Entry())
		if err != nil {
			s.log.Debug("render: record unreadable", "url", v.URL, "err", err)
			continue
		}
		sent, datas = append(sent, v), append(datas, data)
	}
	if err := wire.WriteJSON(st, deliverHeader{Records: len(sent)}); err != nil {
		_ = st.Reset()
		return nil, fmt.Errorf("deliver: %w", err)
	}
	for i, v := range sent {
		if err := wire.WriteFrame(st, []byte(v.Entry().Name())); err != nil {
			_ = st.Reset()
			return nil, fmt.Errorf("deliver: %w", err)
		}
		if err := wire.WriteFrame(st, datas[i]); err != nil {
			_ = st.Reset()
			return nil, fmt.Errorf("deliver: %w", err)
		}
	}
	_ = st.CloseWrite()
	var rep deliverReply
	if err := wire.ReadJSON(bufio.NewReader(st), maxReply, &rep); err != nil {
		_ = st.Reset()
		return nil, fmt.Errorf("deliver reply: %w", err)
	}
	if len(rep.Refused) > 0 {
		err = fmt.Errorf("deliver: %d refused, first: %s", len(sent)-len(rep.Stored), rep.Refused[0])
	}
	return rep.Stored, err
}

// handleDeliver imports the records a member with the role rendered,
// each checked as a replica's import is (archive.Store.Import: digests,
// name, signature, capture time not in the future) and, besides: signed
// by the member that sends it, marked as captured in a browser, captured
// within MaxAge, and of a URL this node owns.
func (s *Service) handleDeliver(ctx context.Context, q *kit.Request) error {
	var h deliverHeader
	if err := q.ReadJSON(maxName, &h); err != nil {
		return err
	}
	if h.Records < 0 || h.Records > maxRecords {
		return fmt.Errorf("%w: %d records in a delivery", kit.ErrBadFrame, h.Records)
	}
	from := q.Member.Peer
	if !s.cfg.HasRole(from) {
		err := fmt.Errorf("%w: a delivery from a member that does not render", ErrRole)
		q.Refuse(err)
		return err
	}
	var rep deliverReply
	refuse := func(name string, err error) {
		s.refd.Add(1)
		if len(rep.Refused) < maxRefusals {
			rep.Refused = append(rep.Refused, fmt.Sprintf("%.200s: %v", name, err))
		}
	}
	role := 0
	for range h.Records {
		name, err := q.ReadFrame(maxName)
		if err != nil {
			return err
		}
		data, err := q.ReadFrame(0)
		if err != nil {
			return err
		}
		if err := s.admit(from, data); err != nil {
			if errors.Is(err, ErrRole) {
				role++
			}
			refuse(string(name), err)
			continue
		}
		if _, _, err := s.cfg.Store.Import(ctx, string(name), data); err != nil {
			refuse(string(name), err)
			continue
		}
		s.received.Add(1)
		rep.Stored = append(rep.Stored, string(name))
	}
	if role > 0 {
		q.Refuse(fmt.Errorf("%w: %d records it may not deliver", ErrRole, role))
	}
	return q.Reply(rep)
}

// admit checks a delivered record before its import: what Import checks
// is checked there.
func (s *Service) admit(from string, data []byte) error {
	c, _, err := s.cfg.Store.VerifyRecord(data)
	if err != nil {
		return err
	}
	switch {
	case c.Peer != from:
		return fmt.Errorf("%w: signed by %s, not by the member that sends it", ErrRole, c.Peer)
	case !c.Browser:
		return fmt.Errorf("%w: not captured in a browser", ErrRole)
	case s.cfg.Now().Sub(c.Time) > MaxAge:
		return fmt.Errorf("%w: captured %v ago", ErrRole, s.cfg.Now().Sub(c.Time).Round(time.Second))
	case !s.cfg.Owns(c.URL):
		return fmt.Errorf("%w: %.200s is not this node's", ErrRole, c.URL)
	}
	return nil
}
