package search

import "time"

// ExtractPDFWithin is extractPDF with limits of the test's choosing.
func ExtractPDFWithin(body []byte, maxBytes, maxPages int, maxRead int64, deadline time.Duration) (Doc, error) {
	return extractPDF(body, pdfLimits{MaxBytes: maxBytes, MaxPages: maxPages, MaxRead: maxRead, Deadline: deadline})
}

// StoreStats is goleveldb's "leveldb.stats" of the store: its levels'
// tables, sizes and compaction reads and writes.
func StoreStats(s *Store) string {
	v, _ := s.db.GetProperty("leveldb.stats")
	return v
}

// BlocksRead is how many blocks s's queries have decoded.
func BlocksRead(s *Store) int64 { return s.blocksRead.Load() }

// SetFoldBound sets when s folds its pending ends into their rows: once
// they are at least min and next/frac (frac > 0).
func SetFoldBound(s *Store, min, frac int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foldMin, s.foldFrac = min, frac
}

// Folds is how many folds s ran since it opened.
func Folds(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.folds
}
