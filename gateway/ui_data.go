package gateway

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contract"
	"github.com/toolgate/toolgate/schemadiff"
	"github.com/toolgate/toolgate/toolcall"
)

// uiActionRecord is the dashboard's view of an action: the API's record plus
// the bound arguments. Values the contract marks x-sensitive are masked in the
// arguments and in the result (viewAction, as every read), so a screen never
// shows them.
type uiActionRecord struct {
	api.Action
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Masked    []string        `json:"masked,omitempty"`
	Erased    []string        `json:"erased,omitempty"`
}

// uiAction serves GET /ui/api/actions/{action_id}: the action's read
// (viewAction) with its arguments, masked alike, and its downstream key (as
// GET /v1/actions/{action_id} has it: what to search the downstream by).
func (s *Server) uiAction(w http.ResponseWriter, r *http.Request, p *Principal) error {
	a, err := s.calls.Action(r.Context(), p, r.PathValue("action_id"))
	if err != nil {
		return err
	}
	v := s.viewAction(a)
	act := v.Action
	act.DownstreamKey = s.calls.DownstreamKey(a)
	return writeJSON(w, http.StatusOK, uiActionRecord{Action: act, Arguments: v.Arguments, Masked: v.Masked, Erased: v.Erased})
}

// uiTool is one tool of the registry page.
type uiTool struct {
	ToolID         string      `json:"tool_id"`
	Owner          string      `json:"owner,omitempty"`
	RiskLevel      string      `json:"risk_level,omitempty"`
	Consumers      []string    `json:"consumers"`
	DefaultVersion string      `json:"default_version,omitempty"`
	Bound          bool        `json:"bound"`
	Versions       []uiVersion `json:"versions"`
}

type uiVersion struct {
	Version     string              `json:"version"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Effect      string              `json:"effect"`
	Deprecated  bool                `json:"deprecated"`
	Errors      []contract.ErrorDef `json:"errors"`
	Rules       []uiRule            `json:"rules"`
}

type uiRule struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Outcome string `json:"outcome"`
}

// uiRegistry serves GET /ui/api/registry: the tools the key may call, with
// their versions, newest last.
func (s *Server) uiRegistry(w http.ResponseWriter, r *http.Request, p *Principal) error {
	out := struct {
		Tools []uiTool `json:"tools"`
	}{Tools: []uiTool{}}
	for _, t := range s.reg().Tools() {
		if !p.Allows(t.ID) {
			continue
		}
		ut := uiTool{ToolID: t.ID, Owner: t.Owner.Owner, RiskLevel: t.Owner.RiskLevel,
			Consumers: slices.Clone(t.Owner.Consumers), Versions: []uiVersion{}}
		if ut.Consumers == nil {
			ut.Consumers = []string{}
		}
		_, ut.Bound = s.cfg.Bindings[t.ID]
		ut.DefaultVersion = s.calls.RolloutDefault(t.ID) // the rollout's default, else the registry's
		for _, v := range t.Versions {
			uv := uiVersion{Version: v.Version, Name: v.Name, Description: v.Description, Effect: v.Effect,
				Deprecated: t.Policy.Deprecates(v.Version), Errors: v.Errors, Rules: []uiRule{}}
			if uv.Errors == nil {
				uv.Errors = []contract.ErrorDef{}
			}
			for _, rl := range v.Rules {
				uv.Rules = append(uv.Rules, uiRule{ID: rl.ID, Rule: rl.Rule, Message: rl.Message, Field: rl.Field, Outcome: rl.Outcome})
			}
			ut.Versions = append(ut.Versions, uv)
		}
		out.Tools = append(out.Tools, ut)
	}
	return writeJSON(w, http.StatusOK, out)
}

// uiVersionOf finds a tool version the key may see, or the API's 403/404.
func (s *Server) uiVersionOf(p *Principal, toolID, version string) (*contract.Tool, *contract.Version, error) {
	if !p.Allows(toolID) {
		return nil, nil, problem(toolcall.CodeToolNotAllowed, "key %q may not see %s", p.Name, toolID)
	}
	t := s.reg().Tool(toolID)
	if t == nil {
		return nil, nil, problem(toolcall.CodeToolNotFound, "%s", s.reg().ToolNotFoundDetailFor(toolID, p.Visible()))
	}
	v := t.Version(version)
	if v == nil {
		return nil, nil, problem(toolcall.CodeVersionNotFound, "%s", t.VersionNotFoundDetail(version))
	}
	return t, v, nil
}

// uiSchema serves GET /ui/api/registry/{tool_id}/{version}: the schema file as
// released.
func (s *Server) uiSchema(w http.ResponseWriter, r *http.Request, p *Principal) error {
	_, v, err := s.uiVersionOf(p, r.PathValue("tool_id"), r.PathValue("version"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(v.Raw)
	return nil
}

// uiDiff serves GET /ui/api/diff?tool=&from=&to=: the classified diff between
// two versions of a tool, counting owner.yaml's consumers as `toolgate diff`
// does.
func (s *Server) uiDiff(w http.ResponseWriter, r *http.Request, p *Principal) error {
	q := r.URL.Query()
	if q.Get("tool") == "" || q.Get("from") == "" || q.Get("to") == "" {
		return problem(toolcall.CodeMalformedRequest, "diff needs tool, from and to")
	}
	t, from, err := s.uiVersionOf(p, q.Get("tool"), q.Get("from"))
	if err != nil {
		return err
	}
	_, to, err := s.uiVersionOf(p, q.Get("tool"), q.Get("to"))
	if err != nil {
		return err
	}
	oldC, err := schemadiff.ParseContract(from.Raw)
	if err != nil {
		return err
	}
	newC, err := schemadiff.ParseContract(to.Raw)
	if err != nil {
		return err
	}
	rep := schemadiff.Diff(oldC, newC, schemadiff.Options{Consumers: len(t.Owner.Consumers)})
	if rep.Changes == nil {
		rep.Changes = []schemadiff.Change{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"tool_id": t.ID, "from": from.Version, "to": to.Version, "consumers": len(t.Owner.Consumers), "report": rep,
	})
}
