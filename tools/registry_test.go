package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/hermesd/hermesd/tools"
)

func named(name string) tools.Tool {
	return tools.Tool{Name: name, Parameters: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, tools.Env, json.RawMessage) (string, error) { return name, nil }}
}

func specNames(r *tools.Registry) string {
	var out []string
	for _, s := range r.Specs() {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

// TestRegistry_Groups: a changing group (an MCP server's tools) is added,
// replaced and removed without touching the built-in tools, and a clash
// changes nothing.
func TestRegistry_Groups(t *testing.T) {
	r, err := tools.NewRegistry(named("b_builtin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetGroup("mcp:x", []tools.Tool{named("mcp_x_one"), named("a_first")}); err != nil {
		t.Fatal(err)
	}
	if got := specNames(r); got != "a_first,b_builtin,mcp_x_one" {
		t.Fatalf("specs = %s", got)
	}
	if err := r.SetGroup("mcp:y", []tools.Tool{named("b_builtin")}); err == nil {
		t.Fatal("a group shadowed a built-in tool")
	}
	if err := r.SetGroup("mcp:y", []tools.Tool{named("mcp_x_one")}); err == nil {
		t.Fatal("a group took another group's tool")
	}
	if err := r.SetGroup("mcp:x", []tools.Tool{named("mcp_x_two")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("mcp_x_one"); ok || specNames(r) != "b_builtin,mcp_x_two" {
		t.Fatalf("after replace: %s", specNames(r))
	}
	r.SetNote("mcp:x", "connected")
	r.SetNote("mcp:down", "restarting")
	r.SetNote("other", "not listed")
	gs := r.Groups("mcp:")
	if len(gs) != 2 || gs[0].Name != "mcp:down" || gs[0].Note != "restarting" || len(gs[0].Tools) != 0 ||
		gs[1].Name != "mcp:x" || gs[1].Note != "connected" || strings.Join(gs[1].Tools, ",") != "mcp_x_two" {
		t.Fatalf("groups = %+v", gs)
	}
	if err := r.SetGroup("mcp:x", nil); err != nil || specNames(r) != "b_builtin" {
		t.Fatalf("after remove: %s, %v", specNames(r), err)
	}
}

// TestRegistry_ConcurrentReadersSeeWholeSets runs readers against a
// changing group (go test -race).
func TestRegistry_ConcurrentReadersSeeWholeSets(t *testing.T) {
	r, _ := tools.NewRegistry(named("base"))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n := len(r.Specs()); n != 1 && n != 3 {
					t.Errorf("saw %d specs", n)
					return
				}
				r.Get("g_1")
			}
		}()
	}
	for i := 0; i < 200; i++ {
		if i%2 == 0 {
			_ = r.SetGroup("g", []tools.Tool{named("g_1"), named("g_2")})
		} else {
			_ = r.SetGroup("g", nil)
		}
	}
	close(stop)
	wg.Wait()
}
