package node

import (
	"strings"
	"testing"

	"github.com/herod-archive/herod/crawl"
)

// TestRefusalReasonNamesTheFlag checks that each refusal a seed can meet
// says which `herod run` flag changes it, with a value the flag takes.
func TestRefusalReasonNamesTheFlag(t *testing.T) {
	for _, tc := range []struct{ kind, detail, want string }{
		{crawl.KindInternal, "10.0.0.7", "restart the node with --allow-private 10.0.0.7"},
		{crawl.KindInternal, "::1", "restart the node with --allow-private ::1/128"},
		{crawl.KindDynamic, "", "restart the node with --allow-dynamic"},
		{crawl.KindHostDenied, "www.bad.example", "host www.bad.example is refused by the node's --deny-host or is not in its --allow-host list"},
		{crawl.KindTrap, "", "crawler trap"},
	} {
		if got := refusalReason(tc.kind, tc.detail); !strings.Contains(got, tc.want) {
			t.Errorf("refusalReason(%s, %s) = %q, want it to say %q", tc.kind, tc.detail, got, tc.want)
		}
	}
}
