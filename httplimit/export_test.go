package httplimit

// WithoutJitter makes a Transport wait exactly what it is asked, for the
// tests whose timelines are exact.
var WithoutJitter TransportOption = transportOption(func(c *transportConfig) { c.noJitter = true })
