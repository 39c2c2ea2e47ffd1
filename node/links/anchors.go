package links

import (
	"net/url"

	"github.com/herod-archive/herod/internal/anchortext"
)

// MaxAnchor bounds an anchor text, in bytes, after normalization.
const MaxAnchor = anchortext.MaxLen

// Anchors returns the anchor text of each link of an HTML document
// fetched from base, by canonical URL (anchortext.Of).
func Anchors(base *url.URL, body []byte) map[string]string { return anchortext.Of(base, body) }

// NormalizeAnchor folds white space, replaces invalid UTF-8 and bounds s
// to MaxAnchor bytes (anchortext.Normalize).
func NormalizeAnchor(s string) string { return anchortext.Normalize(s) }
