// jujuschema: checks a charm's action schemas and params with Juju 3.6's own code
// (github.com/juju/charm/v12 over github.com/juju/gojsonschema v1.0.0). Used by tests/support.
module loadgate.local/tools/jujuschema

go 1.26

require (
	github.com/juju/charm/v12 v12.1.1
	gopkg.in/yaml.v2 v2.4.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/juju/clock v1.0.2 // indirect
	github.com/juju/collections v1.0.4 // indirect
	github.com/juju/errors v1.0.0 // indirect
	github.com/juju/gojsonpointer v0.0.0-20150204194629-afe8b77aa08f // indirect
	github.com/juju/gojsonreference v0.0.0-20150204194633-f0d24ac5ee33 // indirect
	github.com/juju/gojsonschema v1.0.0 // indirect
	github.com/juju/loggo v1.0.0 // indirect
	github.com/juju/mgo/v3 v3.0.4 // indirect
	github.com/juju/names/v5 v5.0.0 // indirect
	github.com/juju/os/v2 v2.2.3 // indirect
	github.com/juju/schema v1.2.0 // indirect
	github.com/juju/utils/v3 v3.1.0 // indirect
	github.com/juju/version/v2 v2.0.1 // indirect
	github.com/mohae/deepcopy v0.0.0-20170929034955-c48cc78d4826 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/crypto v0.3.0 // indirect
	golang.org/x/net v0.7.0 // indirect
	golang.org/x/sys v0.5.0 // indirect
	gopkg.in/gobwas/glob.v0 v0.2.3 // indirect
)

// Juju 3.6 builds with its own fork of yaml.v2 (see juju's go.mod); so do we.
replace gopkg.in/yaml.v2 => github.com/juju/yaml/v2 v2.0.0
