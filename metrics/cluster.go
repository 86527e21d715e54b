package metrics

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hermesd/hermesd/messages"
)

// clusterInstruments are the series of cluster mode.
type clusterInstruments struct {
	members                 metric.Int64Gauge
	activations, leasesLost metric.Int64Counter
	lostReasons             *bounded
}

func (c *clusterInstruments) init(meter metric.Meter) error {
	var err error
	if c.members, err = meter.Int64Gauge("hermesd_cluster_members",
		metric.WithDescription("Cluster members this member sees, itself included (cluster mode).")); err != nil {
		return fmt.Errorf("create cluster members gauge: %w", err)
	}
	if c.activations, err = meter.Int64Counter("hermesd_cluster_activations",
		metric.WithDescription("Sessions activated on this member with their lease claimed (cluster mode), by platform.")); err != nil {
		return fmt.Errorf("create activations counter: %w", err)
	}
	if c.leasesLost, err = meter.Int64Counter("hermesd_cluster_leases_lost",
		metric.WithDescription("Session activations stopped for their lease (cluster mode), by reason: claim (held elsewhere), renew (renewal failed), expired, fenced (a write refused: another member owns the session), moved (handed to its key's member).")); err != nil {
		return fmt.Errorf("create leases-lost counter: %w", err)
	}
	c.lostReasons = fixed("claim", "renew", "expired", "fenced", "moved")
	return nil
}

// LeaseClaimed implements actors.LeaseObserver: a session activated here.
func (m *Metrics) LeaseClaimed(s messages.Session, _ uint64) {
	m.cluster.activations.Add(bg, 1, m.attrs(m.platform(s.Platform())))
}

// LeaseLost implements actors.LeaseObserver.
func (m *Metrics) LeaseLost(_ messages.Session, why string) {
	m.cluster.leasesLost.Add(bg, 1, m.attrs(attribute.String("reason", m.cluster.lostReasons.value(why))))
}

// ClusterMembers records how many members this member sees.
func (m *Metrics) ClusterMembers(n int) { m.cluster.members.Record(bg, int64(n)) }
