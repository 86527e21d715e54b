package messages_test

import (
	"os/exec"
	"testing"
)

// TestProto_GeneratedCodeIsCurrent pins hermes.proto's "regenerate with
// scripts/proto.sh": the script runs, and the checked-in hermes.pb.go is
// exactly what it produces from hermes.proto, so an edit to the .proto
// without regenerating fails here.
func TestProto_GeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatal("protoc is not installed; install it with: apt-get install protobuf-compiler (scripts/deps.sh test does)")
	}
	cmd := exec.Command("./scripts/proto.sh", "-check")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/proto.sh -check: %v\n%s", err, out)
	}
}
