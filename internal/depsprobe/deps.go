// Package depsprobe pins dependencies during bootstrap; deleted once real imports exist.
package depsprobe

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/asynkron/protoactor-go/scheduler"
	_ "github.com/asynkron/protoactor-go/cluster"
	_ "github.com/asynkron/protoactor-go/remote"
	_ "github.com/bwmarrin/discordgo"
	_ "github.com/go-telegram/bot"
	_ "github.com/gorilla/websocket"
	_ "github.com/hajimehoshi/go-mp3"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/thesyncim/gopus"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/prometheus"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "go.yaml.in/yaml/v3"
	_ "google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite"
)
