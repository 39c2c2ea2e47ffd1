package resolve

import "github.com/herod-archive/herod/archive"

// What this node lets leave it for other nodes' gateways (Service.Access):
// its own gateway applies the same rules to everything it shows
// (gateway/access.go), so they hold for the captures it serves either way.

// listed returns the versions of vs the access rules list to others.
func (sv *Service) listed(vs []SignedVersion) []SignedVersion {
	if sv.Access == nil {
		return vs
	}
	out := vs[:0]
	for _, v := range vs {
		if sv.Access(v.URL, v.Time).Listed() {
			out = append(out, v)
		}
	}
	return out
}

// shown reports whether the access rules let v's capture go to others.
func (sv *Service) shown(v archive.Version) bool {
	return sv.Access == nil || sv.Access(v.URL, v.Time).Shown()
}
