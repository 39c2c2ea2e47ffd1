// Package searchtest builds the sample web of known content that the
// search tests and benchmarks index: pages of words drawn from a Zipf
// vocabulary on several hosts, captured over four days (a word added on
// day 2, a page gone 404 on day 3), the queries whose targets are known,
// and a reference engine (a bleve index of the same captures) to compare
// rankings with. For tests only.
package searchtest
