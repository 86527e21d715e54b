package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hermesd/hermesd/config"
)

// clusterBody is GET /api/cluster (daemon.ClusterStatus).
type clusterBody struct {
	Member   string   `json:"member"`
	Address  string   `json:"address"`
	Members  []string `json:"members"`
	Sessions []struct {
		Key        string `json:"key"`
		LeaseEpoch uint64 `json:"lease_epoch"`
	} `json:"sessions"`
}

// printCluster adds the cluster to `hermesd status` when HERMES_CLUSTER is
// on: this member, the members it sees, and the sessions it holds with
// their lease epochs (at most limit of them).
func printCluster(ctx context.Context, env func(string) (string, bool), w io.Writer, limit int) error {
	cfg, err := config.Load(env)
	if err != nil || !cfg.Cluster.On {
		return nil // a configuration that does not load: apiGet already said so
	}
	var cl clusterBody
	if err := apiGet(ctx, env, "/api/cluster", &cl); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncluster member %s (%s) · provider %s · %d members: %s · %d sessions held here\n",
		cl.Member, cl.Address, cfg.Cluster.Provider, len(cl.Members), strings.Join(cl.Members, ", "), len(cl.Sessions))
	if len(cl.Sessions) == 0 || limit <= 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLEASE EPOCH")
	for i, s := range cl.Sessions {
		if i == limit {
			fmt.Fprintf(tw, "… %d more\t\n", len(cl.Sessions)-limit)
			break
		}
		fmt.Fprintf(tw, "%s\t%d\n", s.Key, s.LeaseEpoch)
	}
	return tw.Flush()
}
