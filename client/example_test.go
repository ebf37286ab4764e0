package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/toolgate/toolgate/client"
)

// An on-call script that lists the actions needing a person and approves one.
func Example() {
	c := client.New(os.Getenv("TOOLGATE_URL"), os.Getenv("TOOLGATE_KEY"), nil)
	ctx := context.Background()
	held, err := c.ListAllActions(ctx, client.Filter{State: "awaiting_approval"})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range held {
		fmt.Println(a.ActionID, a.ToolID, a.CreatedAt)
	}
	a, err := c.Approve(ctx, "refund-7f3a9c21", "customer verified by phone")
	var p *client.Problem
	switch {
	case errors.As(err, &p) && p.Code == "action_not_awaiting_approval":
		fmt.Println("someone else decided already; the action is", p.State)
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(a.ActionID, "is now", a.State)
	}
}
