// Package gwstats holds the gateway's counters as a plain type (Stats),
// below the gateway, so that the node's status and metrics carry them
// without importing the HTTP package. The gateway fills them
// (gateway.Server.Stats, an alias of this type).
package gwstats
