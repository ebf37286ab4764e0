package ledger

// WakeChannels is how many actions have a wake-up channel in s (test only).
func (s *Service) WakeChannels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters)
}
