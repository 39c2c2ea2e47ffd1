package archive

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/herod-archive/herod/internal/id"
)

// FileExt is the extension of segment files (and of the one-file
// layout's version files).
const FileExt = ".warc.gz"

// objectsDir is the directory, relative to the store root, of the
// one-file layout's version files (migrate.go).
const objectsDir = "objects"

// Entry names one version for replication: the thesis's (SHA-1(url),
// SHA-1(content), day) triple, plus a sequence number that is non-zero
// only when the same content came back the same day after a different one
// (A, B, A). Its Name was a file name in the one-file layout; it is now
// what replicas list, compare (DirSum) and ask for.
type Entry struct {
	Key    id.ID `json:"key"`
	Digest id.ID `json:"digest"`
	Day    int64 `json:"day"`
	Seq    int   `json:"seq,omitempty"`
}

// Name returns the file's base name:
// <sha1(url) hex><sha1(content) hex><day>[.<seq>].warc.gz
func (e Entry) Name() string {
	var b strings.Builder
	b.Grow(2*2*id.Size + 24 + len(FileExt))
	b.WriteString(hex.EncodeToString(e.Key[:]))
	b.WriteString(hex.EncodeToString(e.Digest[:]))
	b.WriteString(strconv.FormatInt(e.Day, 10))
	if e.Seq > 0 {
		b.WriteByte('.')
		b.WriteString(strconv.Itoa(e.Seq))
	}
	b.WriteString(FileExt)
	return b.String()
}

// Path returns the one-file layout's path of the version, relative to the
// store root (what migration reads):
// objects/<hex key[0]>/<hex key[1]>/<Name>.
func (e Entry) Path() string {
	return path.Join(objectsDir, leafDir(e.Key), e.Name())
}

// hash is the entry's contribution to its directory hashes.
func (e Entry) hash() id.ID { return id.ID(sha1.Sum([]byte(e.Name()))) }

// leafDir is "ab/cd" for a key starting with bytes 0xab 0xcd.
func leafDir(k id.ID) string {
	return hex.EncodeToString(k[:1]) + "/" + hex.EncodeToString(k[1:2])
}

// ParseName parses a version file's base name (see Entry.Name).
func ParseName(name string) (Entry, error) {
	var e Entry
	rest, ok := strings.CutSuffix(name, FileExt)
	if !ok || len(rest) <= 4*id.Size {
		return e, fmt.Errorf("archive: bad file name %q", name)
	}
	k, err1 := id.Parse(rest[:2*id.Size])
	d, err2 := id.Parse(rest[2*id.Size : 4*id.Size])
	if err1 != nil || err2 != nil || strings.ToLower(rest[:4*id.Size]) != rest[:4*id.Size] {
		return e, fmt.Errorf("archive: bad file name %q", name)
	}
	dayStr, seqStr, hasSeq := strings.Cut(rest[4*id.Size:], ".")
	day, err := strconv.ParseInt(dayStr, 10, 64)
	if err != nil || strconv.FormatInt(day, 10) != dayStr {
		return e, fmt.Errorf("archive: bad day in file name %q", name)
	}
	e = Entry{Key: k, Digest: d, Day: day}
	if hasSeq {
		seq, err := strconv.Atoi(seqStr)
		if err != nil || seq <= 0 || strconv.Itoa(seq) != seqStr {
			return Entry{}, fmt.Errorf("archive: bad sequence in file name %q", name)
		}
		e.Seq = seq
	}
	return e, nil
}
