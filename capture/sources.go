package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/ledger"
)

// logLine is the part of a decision-log record (docs/decision-log.md) capture reads.
type logLine struct {
	ToolID      string          `json:"tool_id"`
	ToolVersion string          `json:"tool_version"`
	StatusCode  int             `json:"status_code"`
	Arguments   json.RawMessage `json:"arguments"`
	Result      json.RawMessage `json:"result"`
	Masked      []string        `json:"masked"`
	Erased      []string        `json:"erased"`
}

// MaxLineBytes bounds one decision-log line FromLog reads.
const MaxLineBytes = 16 << 20

// FromLog reads decision-log lines (JSON Lines) and returns the calls of toolID that carry
// arguments (lines written with arguments: digest carry none and are skipped). Masked and
// erased pointers are kept so Build replaces those values too. Lines that are not JSON
// objects are skipped and reported in warnings.
func FromLog(r io.Reader, toolID string) (recs []Record, warnings []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			warnings = append(warnings, fmt.Sprintf("log line %d: not a decision-log record: %v", n, err))
			continue
		}
		if l.ToolID != toolID {
			continue
		}
		rec := Record{Source: fmt.Sprintf("log line %d", n), ToolID: l.ToolID, ToolVersion: l.ToolVersion, Arguments: l.Arguments}
		if l.StatusCode >= 200 && l.StatusCode < 300 {
			rec.Result = l.Result
		}
		split := func(ptrs []string, args, result *[]string) {
			for _, p := range ptrs {
				switch {
				case strings.HasPrefix(p, "/arguments/"):
					*args = append(*args, strings.TrimPrefix(p, "/arguments"))
				case strings.HasPrefix(p, "/result/"):
					*result = append(*result, strings.TrimPrefix(p, "/result"))
				}
			}
		}
		split(l.Masked, &rec.Masked, &rec.ResultMasked)
		split(l.Erased, &rec.Erased, &rec.ResultErased)
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, warnings, fmt.Errorf("read decision log: line %d: %w", n+1, err)
	}
	return recs, warnings, nil
}

// Lister is the part of a ledger.Store capture needs.
type Lister = ledger.Lister

// FromLedger lists a tenant's actions of toolID (every page) and returns their canonical
// arguments and 2xx result bodies, oldest first.
func FromLedger(ctx context.Context, store Lister, tenant, toolID string) ([]Record, error) {
	acts, err := ledger.ListAll(ctx, store, ledger.Filter{Tenant: tenant, ToolID: toolID})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].CreatedAt.Before(acts[j].CreatedAt) })
	recs := make([]Record, 0, len(acts))
	for _, a := range acts {
		if a.ToolID != toolID {
			continue
		}
		rec := Record{Source: "ledger " + a.Tenant + "/" + a.ID, ToolID: a.ToolID, ToolVersion: a.Version, Arguments: a.Arguments}
		if a.Result != nil && a.Result.StatusCode >= 200 && a.Result.StatusCode < 300 && json.Valid(a.Result.Body) {
			rec.Result = a.Result.Body
		}
		recs = append(recs, rec)
	}
	return recs, nil
}
