package importer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ARC files (the Internet Archive's format before WARC). A file is a
// sequence of records, each a header line and a block:
//
//	URL IP-address Archive-date Content-type Archive-length\n
//	<Archive-length bytes>\n
//
// (version 1; version 2 adds result code, checksum, location, offset and
// file name before the length). Archive-date is YYYYMMDDhhmmss in UTC.
// The first record, filedesc://, describes the file; the others hold an
// HTTP response (status line, headers, payload) as fetched. Compressed
// ARCs gzip each record on its own, as WARCs do.

// arcRecord is one ARC record.
type arcRecord struct {
	URL         string
	Date        time.Time
	ContentType string
	Block       []byte
}

// errARC is wrapped by every ARC parse failure.
var errARC = errors.New("malformed arc record")

// maxARCLine bounds an ARC header line.
const maxARCLine = 16 << 10

// readARC reads one ARC record from br.
func readARC(br *bufio.Reader) (*arcRecord, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(line) > maxARCLine {
		return nil, fmt.Errorf("%w: header line longer than %d bytes", errARC, maxARCLine)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: truncated header line", errARC)
	}
	f := strings.Fields(strings.TrimRight(string(line), "\r\n"))
	if len(f) != 5 && len(f) != 10 {
		return nil, fmt.Errorf("%w: header line %.80q has %d fields, not 5 (version 1) or 10 (version 2)", errARC, line, len(f))
	}
	n, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err != nil || n < 0 || n > maxMember {
		return nil, fmt.Errorf("%w: length %q", errARC, f[len(f)-1])
	}
	t, err := time.Parse("20060102150405", f[2])
	if err != nil {
		return nil, fmt.Errorf("%w: date %q", errARC, f[2])
	}
	block := make([]byte, 0, min(n, 1<<20))
	buf := make([]byte, 32<<10)
	for left := n; left > 0; {
		k, err := io.ReadFull(br, buf[:min(left, int64(len(buf)))])
		block = append(block, buf[:k]...)
		left -= int64(k)
		if err != nil {
			return nil, fmt.Errorf("%w: block of %d bytes truncated at %d", errARC, n, len(block))
		}
	}
	return &arcRecord{URL: f[0], Date: t.UTC(), ContentType: f[3], Block: block}, nil
}
