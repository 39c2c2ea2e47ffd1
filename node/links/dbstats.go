package links

import "github.com/syndtr/goleveldb/leveldb"

// DBStats fills st with the link index's goleveldb statistics: its level
// sizes and, since it was opened, the bytes compactions read and wrote
// per level (the scale benchmark's per-database table,
// docs/scale-storage.md).
func (x *Index) DBStats(st *leveldb.DBStats) error { return x.db.Stats(st) }
