// Package atomicfile writes a small file whole or not at all: through a
// synced temporary file in the same directory and a rename, so that a
// reader (or a process killed midway) sees the old file or the new one,
// never a part.
package atomicfile
