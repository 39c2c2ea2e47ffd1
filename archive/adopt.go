package archive

import (
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/internal/id"
)

// Adopting a peer's dictionary. A store that has no dictionary of its own
// yet and imports a record compressed with a peer's (a replica's first
// copies from a node that trained already) makes that dictionary its own
// instead of training one: in a ring, one store trains and the others
// take its dictionary, fetched by id and verified by its hash as every
// peer's dictionary is (AddDictionary). It is adopted only if it packs
// the records the store has collected as samples (at least
// minAdoptSamples) to at most adoptRatio (0.95) of their size compressed
// without a dictionary: a dictionary that does not fit the store's pages,
// or a peer's made to be useless, is passed over, and the store trains
// its own when its samples are complete.

// Adoption thresholds.
const (
	minAdoptSamples = 32
	adoptRatio      = 0.95
)

// noDictEncoder compresses at the records' level without a dictionary,
// the baseline a peer's dictionary is measured against.
var (
	noDictOnce sync.Once
	noDictEnc  *zstd.Encoder
)

func noDictEncoder() *zstd.Encoder {
	noDictOnce.Do(func() {
		noDictEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(streamWindow), zstd.WithEncoderConcurrency(1))
	})
	return noDictEnc
}

// fits reports whether zd packs samples to at most adoptRatio of their
// size packed without a dictionary, and the two sizes.
func fits(zd *zdict, samples [][]byte) (ok bool, with, without int) {
	enc, plain := zd.encoder(), noDictEncoder()
	var buf []byte
	for _, s := range samples {
		buf = enc.EncodeAll(s, buf[:0])
		with += len(buf)
		buf = plain.EncodeAll(s, buf[:0])
		without += len(buf)
	}
	return without > 0 && float64(with) <= adoptRatio*float64(without), with, without
}

// consider offers the trainer a peer's dictionary, held by the store and
// used by a record just imported: while the trainer still collects
// samples (no dictionary of the store's own, none training) and has at
// least minAdoptSamples of them, it checks on a goroutine of its own
// whether zd fits them and, if so, adopts it through done as if trained.
// Each dictionary is considered once.
func (t *dictTrainer) consider(zd *zdict) {
	if t.off.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.off.Load() || t.training || t.tried[zd.hash] || len(t.samples) < minAdoptSamples {
		return
	}
	if t.tried == nil {
		t.tried = make(map[id.ID]bool)
	}
	t.tried[zd.hash] = true
	samples := t.samples
	t.training = true
	t.wg.Add(1)
	go t.adopt(zd, samples)
}

// adopt makes zd the store's dictionary if it fits samples; otherwise the
// trainer goes on collecting (and trains when it has its samples).
func (t *dictTrainer) adopt(zd *zdict, samples [][]byte) {
	defer t.wg.Done()
	ok, with, without := fits(zd, samples)
	var err error
	if ok {
		if err = t.done(zd); err == nil {
			t.log.Info("adopted a peer's zstd dictionary", "id", zd.id, "samples", len(samples),
				"packed", with, "without_dictionary", without)
			t.mu.Lock()
			t.samples, t.bytes, t.got = nil, 0, "adopted"
			t.mu.Unlock()
			t.off.Store(true)
			return
		}
	}
	t.log.Debug("peer's zstd dictionary not adopted", "id", zd.id, "samples", len(samples),
		"packed", with, "without_dictionary", without, "err", err)
	t.mu.Lock()
	t.training = false
	t.mu.Unlock()
}

// adoptOrTrain runs when the trainer's samples are complete (and
// Options.DictWait has passed): the peers' dictionaries the store holds
// (fetched by id and verified by hash for the replicas it imported) are
// tried first, and the one that packs samples smallest, if it fits, is
// adopted; the store trains its own only if none fits. So a store whose
// peers' records reached it before its samples were complete, or while
// it waited, but not through consider (it had too few samples then, or
// the dictionary was tried and did not fit them yet), takes the ring's
// dictionary instead of training a second one.
func (t *dictTrainer) adoptOrTrain(samples [][]byte) {
	var best *zdict
	bestWith, bestWithout, tried := 0, 0, 0
	if t.peers != nil {
		for _, zd := range t.peers() {
			tried++
			if ok, with, without := fits(zd, samples); ok && (best == nil || with < bestWith) {
				best, bestWith, bestWithout = zd, with, without
			}
		}
	}
	if best != nil {
		if err := t.done(best); err == nil {
			t.log.Info("adopted a peer's zstd dictionary", "id", best.id, "samples", len(samples),
				"packed", bestWith, "without_dictionary", bestWithout, "peers", tried)
			t.mu.Lock()
			t.got = "adopted"
			t.mu.Unlock()
			t.off.Store(true)
			t.wg.Done()
			return
		}
	}
	t.train(samples, tried) // calls wg.Done
}

// peerDicts returns the dictionaries the store holds, none of them its
// own (the trainer asks only while the store has none).
func (s *Store) peerDicts() []*zdict {
	own := s.zd.Load()
	s.dictMu.Lock()
	defer s.dictMu.Unlock()
	out := make([]*zdict, 0, len(s.dicts))
	for _, zd := range s.dicts {
		if zd != own {
			out = append(out, zd)
		}
	}
	return out
}
