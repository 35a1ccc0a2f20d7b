package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer/metrics"
)

// train plot RUN [RUN...] [--out DIR] [--serve ADDR]: the PNG curves of the
// first RUN's metrics.jsonl into DIR (default RUN/plots) and the run report
// RUN/report.html (trainer/metrics/report.go), one offline page whose
// curves overlay every RUN given; its rollouts are the first RUN's. With
// --serve, no file is written: the page is served on ADDR (":8080" binds
// 127.0.0.1:8080; give a host, e.g. 0.0.0.0:8080, to listen elsewhere),
// rebuilt whenever the runs' files change (a run that has logged nothing
// yet gets a note that reloads), until Ctrl-C. The written paths go to
// stderr.
func init() {
	var out, serve string
	var noPNG bool
	cmd := &cobra.Command{
		Use:   "plot RUN [RUN...] [--out DIR] [--serve ADDR]",
		Short: "write PNG curves (RUN/plots) and the run report RUN/report.html; --serve serves the report live",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := cmd.ErrOrStderr()
			if serve != "" {
				addr, err := metrics.ServeAddr(serve)
				if err != nil {
					return err
				}
				for _, run := range args {
					if st, err := os.Stat(run); err != nil || !st.IsDir() {
						return fmt.Errorf("serve: %s is not a run directory", run)
					}
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("serve: %w", err)
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				fmt.Fprintf(log, "serving the report of %v on http://%s/ (Ctrl-C stops)\n", args, ln.Addr())
				if err := metrics.Serve(ctx, ln, args, log); err != nil {
					return err
				}
				fmt.Fprintln(log, "serve: stopped")
				return nil
			}
			if !noPNG {
				dir := out
				if dir == "" {
					dir = filepath.Join(args[0], "plots")
				}
				files, err := metrics.Plot(filepath.Join(args[0], metrics.File), dir)
				if err != nil {
					return err
				}
				for _, f := range files {
					fmt.Fprintln(log, "wrote", f)
				}
			}
			path, err := metrics.WriteReport(args, metrics.ReportOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintln(log, "wrote", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "PNG output directory (default RUN/plots of the first RUN)")
	cmd.Flags().StringVar(&serve, "serve", "", "serve the report live on ADDR (e.g. :8080 = 127.0.0.1:8080) instead of writing files")
	cmd.Flags().BoolVar(&noPNG, "no-png", false, "write only the report, no PNGs")
	root.AddCommand(cmd)
}
