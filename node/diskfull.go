package node

// storePaused is the crawler's and replication's Config.Paused: a full
// disk (the archive at its reserve, archive.Store.DiskFull) or a quota
// all but used (archive.Store.AtQuota) pauses the crawl, which would
// otherwise fetch pages it cannot store, and the copies this node would
// take as a replica, which it would download and refuse every round;
// both resume by themselves when space returns. The gateway keeps
// serving meanwhile.
func (n *Node) storePaused() string {
	switch {
	case n.store.DiskFull():
		return "disk full"
	case n.store.AtQuota():
		return "quota reached"
	}
	return ""
}

// crawlPaused is the crawler's Config.Paused: storePaused's reasons, and
// search indexing fallen behind the pages the crawl stores
// (node/search Service.Behind), which resumes by itself once the
// indexer has caught up.
func (n *Node) crawlPaused() string {
	if r := n.storePaused(); r != "" {
		return r
	}
	if n.search != nil && n.search.Behind() {
		return "search indexing behind"
	}
	return ""
}
