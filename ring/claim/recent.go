package claim

// recentSet holds the keys this node fetched or is fetching today, in
// bounded memory: two generations of at most limit keys each. When the
// newer one is full, the older is dropped and the newer takes its place,
// so the set holds at least the limit most recent keys and at most twice
// as many. A key that has left it is still found through Config.History
// (the store's record of the day's fetch), which only misses fetches
// still under way: always among the most recent keys.
type recentSet struct {
	limit    int
	cur, old map[short]struct{}
}

// DefaultFetchSetKeys is the default Config.FetchSetKeys.
const DefaultFetchSetKeys = 1 << 17

func newRecentSet(limit int) recentSet {
	return recentSet{limit: limit, cur: make(map[short]struct{})}
}

// has reports whether s is held.
func (r *recentSet) has(s short) bool {
	if _, ok := r.cur[s]; ok {
		return true
	}
	_, ok := r.old[s]
	return ok
}

// add holds s, dropping the older generation first when the newer is full.
func (r *recentSet) add(s short) {
	if r.has(s) {
		return
	}
	if len(r.cur) >= r.limit {
		r.old, r.cur = r.cur, make(map[short]struct{}, r.limit)
	}
	r.cur[s] = struct{}{}
}

// len returns how many keys are held.
func (r *recentSet) len() int { return len(r.cur) + len(r.old) }

// each calls fn for every key held, the older generation first.
func (r *recentSet) each(fn func(short)) {
	for s := range r.old {
		fn(s)
	}
	for s := range r.cur {
		fn(s)
	}
}
