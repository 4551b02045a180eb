// Package demoapi is the local LLM-style API that sluice's client demos
// call (examples/apiclient in one process, examples/redisquota -api in
// three that share its quotas through Redis), and the measures their
// summaries print: how full the API's own token window was, percentiles,
// numbers with thousands separators. It is internal: its only users are
// the demos, and it may change with them.
package demoapi
