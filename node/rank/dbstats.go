package rank

import "github.com/syndtr/goleveldb/leveldb"

// DBStats fills st with the rank store's goleveldb statistics: its level
// sizes and, since it was opened, the bytes compactions read and wrote
// per level (the scale benchmark's per-database table,
// docs/scale-storage.md).
func (s *Store) DBStats(st *leveldb.DBStats) error { return s.db.Stats(st) }
