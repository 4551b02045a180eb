package redistest

// Stop freezes the server (SIGSTOP), as a hung host, a long GC pause of a
// VM or a process stuck in the kernel would: connections stay open and the
// kernel still accepts new ones, but nothing is read or answered until
// Continue. Stopping a killed or stopped server does nothing.
func (s *Server) Stop() { s.signal(sigStop) }

// Continue resumes a stopped server (SIGCONT), which then answers what it
// was sent meanwhile. Tests that Stop register it as a cleanup, so that a
// failing test leaves no frozen server behind.
func (s *Server) Continue() { s.signal(sigCont) }

func (s *Server) signal(sig int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = sendSignal(s.cmd, sig)
	}
}
