package grpclimit

// WithoutJitter makes a Client wait exactly what it is asked, for the
// tests whose timelines are exact.
var WithoutJitter ClientOption = clientOptionFunc(func(c *clientConfig) { c.noJitter = true })
