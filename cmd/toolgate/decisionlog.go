package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
)

// decisionLog is the gateway's decision log file: a writer over a file sink
// that reopens its file on SIGHUP, for external rotation.
type decisionLog struct {
	writer  *decisionlog.Writer // nil when the log is off
	dropped prometheus.Counter  // set once the gateway's metrics exist
	hup     chan os.Signal
}

func openDecisionLog(cfg config.DecisionLog, logger *slog.Logger) (*decisionLog, error) {
	d := &decisionLog{}
	if cfg.Path == "" {
		return d, nil
	}
	mode, err := decisionlog.ParseArgumentsMode(cfg.Arguments)
	if err != nil {
		return nil, err
	}
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: cfg.Path})
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	d.writer = decisionlog.NewWriter(sink, decisionlog.Config{
		Mode: mode, QueueBytes: cfg.QueueBytes, MaxPayloadBytes: cfg.MaxPayloadBytes,
		OnDrop: func(decisionlog.DropReason) {
			if d.dropped != nil {
				d.dropped.Inc()
			}
		},
		OnError: func(err error) { logger.Error("decision log: " + err.Error()) },
	})
	d.hup = make(chan os.Signal, 1)
	signal.Notify(d.hup, syscall.SIGHUP)
	go func() {
		for range d.hup {
			if err := d.writer.Reopen(); err != nil {
				logger.Error("decision log: reopen on SIGHUP: " + err.Error())
			}
		}
	}()
	logger.Info(fmt.Sprintf("decision log: %s (arguments: %s)", cfg.Path, mode))
	return d, nil
}

func (d *decisionLog) close(ctx context.Context) {
	if d.writer == nil {
		return
	}
	signal.Stop(d.hup)
	close(d.hup)
	d.writer.Close(ctx)
}
