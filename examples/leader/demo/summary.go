//go:build unix

package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dynalease/dynalease/internal/timing"
)

// summary prints the measurements, the checks and the verdict.
func (d *demo) summary(err error) {
	r := &d.res
	rtt2 := 2 * r.rttMax
	failoverBound := leaseDuration + timing.MaxJittered(retryPeriod) + rtt2
	handoverBound := timing.MaxJittered(retryPeriod) + rtt2

	fmt.Println()
	if r.first == nil {
		d.verdict(err)
		return
	}
	fmt.Println("summary (times by the demo's clock, at the arrival of each line)")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  step\tfrom → to\ttook\tbound\tverdict")
	row := func(step, span string, took time.Duration, bound, verdict string) {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", step, span, secs(took), bound, verdict)
	}
	if f := r.first; f != nil {
		row("election", "candidates started → "+f.cand+" started leading", f.at-r.candidatesAt, "", "ok")
	}
	if f := r.failover; f != nil {
		fromKill := f.at - r.killAt
		row("failover", "SIGKILL "+r.crashed+" → "+f.cand+" started leading", fromKill, "", "")
		if s := r.crashedLastRenewal; s >= 0 {
			fromRenewal := f.at - s
			verdict := "ok"
			switch {
			case fromRenewal <= failoverBound:
			case fromKill <= failoverBound:
				verdict = "ok if a renewal in flight at the kill landed"
			default:
				verdict = "OVER (warning)"
			}
			row("failover", r.crashed+"'s last printed renewal (sent) → "+f.cand+" started", fromRenewal, secs(failoverBound), verdict)
			gap := f.at - (s + renewDeadline)
			verdict = "ok"
			if gap <= 0 {
				verdict = "VIOLATED"
				d.problems = append(d.problems, fmt.Sprintf("%s took over %v before %s's term ended", f.cand, -gap, r.crashed))
			}
			row("safety", r.crashed+"'s term end (that renewal + renew deadline) → "+f.cand+" started", gap, "> 0", verdict)
		}
	}
	if h := r.handover; h != nil {
		row("handover", "SIGTERM "+r.stopped+" → "+h.cand+" started leading", h.at-r.termAt, "", "")
		if s := r.stoppedLeadingAt; s >= 0 {
			took := h.at - s
			verdict := "ok"
			if took > handoverBound {
				verdict = "OVER (warning)"
			}
			row("handover", r.stopped+"'s stopped-leading (after its release) → "+h.cand+" started", took, secs(handoverBound), verdict)
		} else {
			row("handover", r.stopped+"'s stopped-leading → "+h.cand+" started", 0, "", "not seen before the takeover")
		}
	}
	overlap := "ok"
	if d.overlap {
		overlap = "VIOLATED"
	}
	fmt.Fprintf(w, "  one leader\ttwo candidates between started- and stopped-leading at once\t\t\t%s\n", overlap)
	w.Flush()

	fmt.Printf("  round trip: %d probes (consistent GetItem, conditional UpdateItem): median %s, largest %s; %d failed\n",
		r.rttCount, ms(r.rttMedian), ms(r.rttMax), r.probeErrs)
	fmt.Printf("  bounds: failover = lease %v + 1.2×retry %v + 2×largest round trip %s; handover = 1.2×retry + 2×largest round trip\n",
		leaseDuration, timing.MaxJittered(retryPeriod), ms(r.rttMax))
	fmt.Println("  the one-leader check is best effort: it compares the arrival times of the candidates' own lines")
	d.verdict(err)
}

// verdict prints PASS or FAIL with the reasons.
func (d *demo) verdict(err error) {
	switch {
	case err != nil:
		fmt.Printf("FAIL after %s: %v\n", secs(d.now()), err)
	case len(d.problems) > 0:
		fmt.Printf("FAIL after %s\n", secs(d.now()))
	default:
		fmt.Printf("PASS in %s\n", secs(d.now()))
	}
	for _, p := range d.problems {
		fmt.Println("  problem:", p)
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
