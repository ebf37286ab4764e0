package client

import (
	"context"
	"errors"
	"net/url"

	"github.com/toolgate/toolgate/api"
)

// The rollout endpoints (docs/release-gate.md): read a tool's rollout and
// move it through shadow, canary, promote, rollback and halt.

// The rollout's wire types.
type (
	// Rollout is a tool's rollout status.
	Rollout = api.Rollout
	// RolloutList is every tool's rollout the key may see.
	RolloutList = api.RolloutList
	// ShadowRequest starts validating a candidate beside the default.
	ShadowRequest = api.ShadowRequest
	// CanaryRequest routes a share of new actions to a candidate.
	CanaryRequest = api.CanaryRequest
	// PromoteRequest makes the candidate (or a named version) the default.
	PromoteRequest = api.PromoteRequest
	// RolloutNoteRequest is the body of rollback and halt.
	RolloutNoteRequest = api.RolloutNoteRequest
	// RolloutEvent is one entry of a rollout's audit history.
	RolloutEvent = api.RolloutEvent
	// RolloutVersion is one version of a tool as its rollout sees it.
	RolloutVersion = api.RolloutVersion
)

// Rollouts returns the rollout of every tool the key may see.
func (c *Client) Rollouts(ctx context.Context) (*RolloutList, error) {
	var l RolloutList
	if err := c.do(ctx, "GET", "/v1/rollouts", nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Rollout returns one tool's rollout status.
func (c *Client) Rollout(ctx context.Context, toolID string) (*Rollout, error) {
	return c.rollout(ctx, "GET", toolID, "", nil)
}

// Shadow validates every new call the default accepts against a candidate
// too, enforcing nothing.
func (c *Client) Shadow(ctx context.Context, toolID string, r ShadowRequest) (*Rollout, error) {
	return c.rollout(ctx, "POST", toolID, "/shadow", r)
}

// Canary routes a share of new actions naming no version to a candidate.
func (c *Client) Canary(ctx context.Context, toolID string, r CanaryRequest) (*Rollout, error) {
	return c.rollout(ctx, "POST", toolID, "/canary", r)
}

// Promote makes the candidate (or r.Version) the default.
func (c *Client) Promote(ctx context.Context, toolID string, r PromoteRequest) (*Rollout, error) {
	return c.rollout(ctx, "POST", toolID, "/promote", r)
}

// Rollback restores the previous default at once.
func (c *Client) Rollback(ctx context.Context, toolID string, r RolloutNoteRequest) (*Rollout, error) {
	return c.rollout(ctx, "POST", toolID, "/rollback", r)
}

// Halt stops a shadow or canary candidate; every new call goes to the default.
func (c *Client) Halt(ctx context.Context, toolID string, r RolloutNoteRequest) (*Rollout, error) {
	return c.rollout(ctx, "POST", toolID, "/halt", r)
}

func (c *Client) rollout(ctx context.Context, method, toolID, suffix string, body any) (*Rollout, error) {
	if toolID == "" {
		return nil, errors.New("client: empty tool id")
	}
	var r Rollout
	if err := c.do(ctx, method, "/v1/rollouts/"+url.PathEscape(toolID)+suffix, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
