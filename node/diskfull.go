package node

// crawlPaused is the crawler's Config.Paused: a full disk (the archive at
// its reserve, archive.Store.DiskFull) pauses the crawl, which would
// otherwise fetch pages it cannot store; it resumes by itself when space
// returns. The gateway keeps serving meanwhile.
func (n *Node) crawlPaused() string {
	if n.store.DiskFull() {
		return "disk full"
	}
	return ""
}
