package daemon

import "github.com/hermesd/hermesd/actors"

// observe wires metrics and inspection into deps (owned by the inspection
// work: metrics/, inspect/).
func (d *Daemon) observe(deps *actors.Deps) {}

// inspectionRoutes registers /metrics, /api/actors, /api/status and /status.
func (d *Daemon) inspectionRoutes() {}
