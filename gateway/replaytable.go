package gateway

import (
	"bytes"

	"github.com/herod-archive/herod/internal/webrefs"
)

// tableMark is where replay.js takes the attribute table: the gateway
// writes webrefs.TableJSON in place of the empty array after it.
const tableMark = "/*herod:webrefs*/[]"

// withTable returns the replay script js with the attribute table of
// internal/webrefs written in at tableMark, so that replay.js rewrites
// the attributes the server rewrites and no list of its own. It panics
// when js does not hold tableMark exactly once: the embedded script is
// broken.
func withTable(js []byte) []byte {
	if bytes.Count(js, []byte(tableMark)) != 1 {
		panic("gateway: replay.js must hold " + tableMark + " once")
	}
	return bytes.Replace(js, []byte(tableMark), webrefs.TableJSON(), 1)
}
