// Package warciotest lets tests validate WARC files with warcio.js, a WARC
// implementation not written here (from the npm registry), through the
// scripts in scripts/archive: validate.mjs reads every record and checks
// every digest, and warcio's own cdx-index writes the CDXJ index it would
// give the file.
//
// Setup skips the calling test when node or npm is missing, or when
// HEROD_SKIP_NODE is set; it installs warcio (npm ci) on first use, which
// needs the npm registry once. It is for tests only.
package warciotest
