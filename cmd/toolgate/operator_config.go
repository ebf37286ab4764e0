package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/toolgate/toolgate/config"
)

// The operator commands (actions, rollout) find the gateway the way serve
// finds its address: --gateway, else $TOOLGATE_URL, else the listen address
// of ./toolgate.yaml (or --config FILE), else http://127.0.0.1:8080.

// defaultConfigFile is the configuration serve, the operator commands and
// replay read when --config is not given.
const defaultConfigFile = "toolgate.yaml"

// readOptionalConfig reads path; when path is the default and the file is
// absent it returns nil (the commands then use their defaults). A file that
// is there must parse.
func readOptionalConfig(path string, explicit bool) (*config.Config, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return config.ParseFile(path, data)
}

// listenURL is the URL an operator command dials for a listen address: a
// wildcard host (":8080", "0.0.0.0:8080", "[::]:8080") is dialled on the
// loopback address.
func listenURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(listen))
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// resolveGateway is the gateway's base URL and where it came from (for
// messages): --gateway, $TOOLGATE_URL, the configuration's listen, the default.
func (c *conn) resolveGateway() (base, from string, err error) {
	switch {
	case strings.TrimSpace(*c.gateway) != "":
		base, err = gatewayBase(*c.gateway, "")
		return base, "--gateway", err
	case strings.TrimSpace(os.Getenv(envGatewayURL)) != "":
		base, err = gatewayBase("", os.Getenv(envGatewayURL))
		return base, "$" + envGatewayURL, err
	}
	path, explicit := defaultConfigFile, false
	if c.config != nil && *c.config != "" {
		path, explicit = *c.config, true
	}
	cfg, err := readOptionalConfig(path, explicit)
	if err != nil {
		return "", "", err
	}
	if cfg != nil {
		base, err = listenURL(cfg.Listen)
		return base, path + "'s listen", err
	}
	return defaultURL, "the default", nil
}

// unreachableHint is what an operator command adds when it cannot reach the
// gateway.
func (c *conn) unreachableHint() string {
	from := c.from
	if from == "" {
		from = "the default"
	}
	return fmt.Sprintf("(the address is %s): is the gateway running there? Name its address with --gateway URL or $%s, or run the command where its %s is",
		from, envGatewayURL, defaultConfigFile)
}
