package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/decisionlog"
)

// decisionLog is the gateway's decision log file as a Service: a writer over
// a file sink that reopens its file on SIGHUP, for external rotation. Its
// writer is nil when the log is off.
type decisionLog struct {
	cfg    config.DecisionLog
	logger *slog.Logger

	writer  *decisionlog.Writer
	dropped atomic.Pointer[prometheus.Counter] // set once the gateway's metrics exist
	hup     chan os.Signal
	hupDone chan struct{}
}

// Start opens the file and starts reopening it on SIGHUP.
func (d *decisionLog) Start(context.Context) error {
	if d.cfg.Path == "" {
		return nil
	}
	mode, err := decisionlog.ParseArgumentsMode(d.cfg.Arguments)
	if err != nil {
		return err
	}
	sink, err := decisionlog.OpenFile(decisionlog.FileConfig{Path: d.cfg.Path})
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	d.writer = decisionlog.NewWriter(sink, decisionlog.Config{
		Mode: mode, QueueBytes: d.cfg.QueueBytes, MaxPayloadBytes: d.cfg.MaxPayloadBytes,
		OnDrop: func(decisionlog.DropReason) {
			if c := d.dropped.Load(); c != nil {
				(*c).Inc()
			}
		},
		OnError: func(err error) { d.logger.Error("decision log: " + err.Error()) },
	})
	d.hup, d.hupDone = make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(d.hup, syscall.SIGHUP)
	go func() {
		defer close(d.hupDone)
		for range d.hup {
			if err := d.writer.Reopen(); err != nil {
				d.logger.Error("decision log: reopen on SIGHUP: " + err.Error())
			}
		}
	}()
	d.logger.Info(fmt.Sprintf("decision log: %s (arguments: %s)", d.cfg.Path, mode))
	return nil
}

// countDrops counts the records dropped from now on into c.
func (d *decisionLog) countDrops(c prometheus.Counter) { d.dropped.Store(&c) }

// Stop stops reopening on SIGHUP and closes the writer, flushing what is
// queued until ctx ends.
func (d *decisionLog) Stop(ctx context.Context) error {
	if d.writer == nil {
		return nil
	}
	signal.Stop(d.hup)
	close(d.hup)
	<-d.hupDone
	return d.writer.Close(ctx)
}
