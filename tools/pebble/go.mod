// Wrapper module that pins Pebble and every dependency hash (go.sum) for `loadgate binaries`.
module loadgate.local/tools/pebble

go 1.26

tool github.com/canonical/pebble/cmd/pebble

require (
	github.com/GehirnInc/crypt v0.0.0-20230320061759-8cc1b52080c5 // indirect
	github.com/canonical/go-flags v0.0.0-20230403090104-105d09a091b8 // indirect
	github.com/canonical/pebble v1.26.0 // indirect
	github.com/canonical/x-go v0.0.0-20230522092633-7947a7587f5b // indirect
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/gorilla/websocket v1.5.1 // indirect
	github.com/pkg/term v1.1.0 // indirect
	golang.org/x/net v0.40.0 // indirect
	golang.org/x/sys v0.33.0 // indirect
	golang.org/x/term v0.32.0 // indirect
	gopkg.in/tomb.v2 v2.0.0-20161208151619-d5d1b5820637 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
