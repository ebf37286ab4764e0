package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	alertmanagerFile = "alertmanager/alertmanager.example.yml"
	routesTestFile   = "alertmanager/routes_test.yml"
)

// ownerAlerts are the alerts about actions that wait for a person: each
// keeps the tool's owner label so that Alertmanager can route it to the
// owning team (docs/operations.md, "Routing alerts to the tool's owner").
var ownerAlerts = []string{"ToolgateActionNeedsOperator", "ToolgateUnknownPastHoldAfter", "ToolgateUnknownUnassigned", "ToolgateApprovalQueueStale"}

// amtool finds amtool (Debian's prometheus-alertmanager package); without it
// the test is skipped, except under CI=true, where it fails.
func amtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("amtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("amtool is not installed, and CI=true requires the Alertmanager routing tests (apt-get install prometheus-alertmanager)")
		}
		t.Skip("skipping: amtool is not installed (apt-get install prometheus-alertmanager)")
	}
	return path
}

func runAmtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, amtool(t), args...).CombinedOutput()
	return string(out), err
}

type routeCases struct {
	Cases []struct {
		Name      string            `yaml:"name"`
		Labels    map[string]string `yaml:"labels"`
		Receivers []string          `yaml:"receivers"`
	} `yaml:"cases"`
}

// The example Alertmanager configuration passes amtool's check, and every
// case of routes_test.yml resolves to exactly its receivers.
func TestAlertmanagerExampleRoutes(t *testing.T) {
	t.Parallel()
	if out, err := runAmtool(t, "check-config", alertmanagerFile); err != nil {
		t.Fatalf("amtool check-config %s: %v\n%s", alertmanagerFile, err, out)
	}
	var rc routeCases
	readYAML(t, routesTestFile, &rc)
	if len(rc.Cases) == 0 {
		t.Fatalf("%s has no cases", routesTestFile)
	}
	for _, c := range rc.Cases {
		if len(c.Receivers) == 0 || len(c.Labels) == 0 {
			t.Errorf("%s: a case needs labels and receivers", c.Name)
			continue
		}
		args := []string{"config", "routes", "test", "--config.file=" + alertmanagerFile,
			"--verify.receivers=" + strings.Join(c.Receivers, ",")}
		names := make([]string, 0, len(c.Labels))
		for k := range c.Labels {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			args = append(args, k+"="+c.Labels[k])
		}
		if out, err := runAmtool(t, args...); err != nil {
			t.Errorf("%s: %v\namtool %s\n%s", c.Name, err, strings.Join(args, " "), out)
		}
	}
	// A case that expects the wrong receiver must fail: the check can fail.
	out, err := runAmtool(t, "config", "routes", "test", "--config.file="+alertmanagerFile,
		"--verify.receivers=toolgate-operators", "owner=payment-platform", "severity=page")
	if err == nil {
		t.Fatalf("amtool accepted a wrong receiver; its verification does not work here:\n%s", out)
	}
}

// Every alert about actions that wait for a person keeps the owner label
// (its rule tests expect it on every alert they fire), and the routing
// tests route each of them by owner.
func TestOwnerAlertsKeepTheOwnerLabel(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	readYAML(t, rulesFile, &rules)
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []struct {
					ExpLabels map[string]string `yaml:"exp_labels"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, rulesTestFile, &tests)
	var rc routeCases
	readYAML(t, routesTestFile, &rc)
	for _, name := range ownerAlerts {
		if !alertNamed(rules, name) {
			t.Errorf("%s: no such alert in %s", name, rulesFile)
			continue
		}
		fired := 0
		for _, tc := range tests.Tests {
			for _, a := range tc.AlertRuleTest {
				if a.Alertname != name {
					continue
				}
				for _, e := range a.ExpAlerts {
					fired++
					if e.ExpLabels["owner"] == "" {
						t.Errorf("%s: a rule test expects it without an owner label: %v", name, e.ExpLabels)
					}
				}
			}
		}
		if fired == 0 {
			t.Errorf("%s: no rule test fires it with its labels", name)
		}
		routed := false
		for _, c := range rc.Cases {
			routed = routed || (c.Labels["alertname"] == name && c.Labels["owner"] != "")
		}
		if !routed {
			t.Errorf("%s: %s has no case routing it by owner", name, routesTestFile)
		}
	}
}
