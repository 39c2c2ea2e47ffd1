package forward

import "github.com/syndtr/goleveldb/leveldb"

// DBStats fills st with the forwarder's outbox's goleveldb statistics: its level
// sizes and, since it was opened, the bytes compactions read and wrote
// per level (the scale benchmark's per-database table,
// docs/scale-storage.md).
func (o *Outbox) DBStats(st *leveldb.DBStats) error { return o.db.Stats(st) }
