// Package anchortext finds the anchor text of each link of an HTML page
// (Of) and normalizes anchor texts (Normalize): what the link index
// (node/links) keeps of each link, and what an export of the link graph
// can print beside it.
//
// Concurrency: the functions are safe for concurrent use.
package anchortext
