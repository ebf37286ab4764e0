package sandbox

import "net/http"

func (s *Server) handleEffects(w http.ResponseWriter, r *http.Request) {
	effects := s.Effects(r.URL.Query().Get("key"))
	writeJSON(w, http.StatusOK, map[string]any{"count": len(effects), "effects": effects})
}

func (s *Server) handleReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	writeJSON(w, http.StatusOK, map[string]any{"reset": true})
}

func (s *Server) handleAddFault(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if !s.decode(w, r, &f) {
		return
	}
	if err := s.InjectFault(f); err != nil {
		writeProblem(w, http.StatusBadRequest, "BAD_FAULT", "%v", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"queued": f})
}

// faultView is a queued fault as GET /_sandbox/faults shows it.
type faultView struct {
	Fault
	Left int `json:"left"`
}

func (s *Server) handleListFaults(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]faultView, 0, len(s.faults))
	for _, f := range s.faults {
		out = append(out, faultView{Fault: f.Fault, Left: f.left})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "faults": out})
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"released": s.Release(r.URL.Query().Get("key"))})
}

func (s *Server) handleHeld(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"count": s.Held()})
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	reqs := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		reqs[k] = v
	}
	out := map[string]any{"effects": len(s.effects), "held": len(s.held), "queued_faults": len(s.faults), "requests": reqs}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
