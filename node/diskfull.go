package node

// storePaused is the crawler's and replication's Config.Paused: a full
// disk (the archive at its reserve, archive.Store.DiskFull) pauses the
// crawl, which would otherwise fetch pages it cannot store, and the
// replicas' copies this node would take; both resume by themselves when
// space returns. The gateway keeps serving meanwhile.
func (n *Node) storePaused() string {
	if n.store.DiskFull() {
		return "disk full"
	}
	return ""
}
