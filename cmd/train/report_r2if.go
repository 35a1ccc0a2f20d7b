package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/report"
)

// r2ifReport is `train report --r2if DIR` (make reproduce-r2if).
func r2ifReport(cmd *cobra.Command, dir string) error {
	d, err := report.LoadR2IF(dir)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if err := d.WriteTables(w); err != nil {
		return err
	}
	cs, err := d.Claims()
	if err != nil {
		return err
	}
	held, n, _, _ := report.CountClaims(cs)
	fmt.Fprintf(w, "\nClaims (strict: the ordering holds on every draw and the mean margin, in hundredths of a point, is ≥ %.0f point; a tie does not hold): %d of %d hold\n",
		report.MinMargin, held, n)
	report.WriteReproClaims(w, cs)
	if err := writeJSONFile(filepath.Join(dir, "claims.json"), cs); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	files, err := d.WritePlots(filepath.Join(dir, "plots"))
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "report: wrote %s and %d charts in %s\n", filepath.Join(dir, "claims.json"), len(files), filepath.Join(dir, "plots"))
	return nil
}
