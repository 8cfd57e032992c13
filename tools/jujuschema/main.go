// Command jujuschema checks a charm's action parameters the way Juju 3.6 does, with Juju's own
// code: github.com/juju/charm/v12 (ReadActionsYaml, ActionSpec.ValidateParams and
// ActionSpec.InsertDefaults, the versions Juju 3.6 requires) over github.com/juju/gojsonschema
// v1.0.0 (JSON-Schema draft 4).
//
// charmcraft writes the `actions` mapping of charmcraft.yaml into the packed charm's
// actions.yaml unchanged (a YAML dump of it); Juju reads that file with ReadActionsYaml, which
// wraps each action's `params` into an object schema (other keys such as
// `additionalProperties` and `required` go beside them) and refuses a schema gojsonschema
// cannot load. On `juju run`, the controller validates the given params against that schema,
// then inserts the schema's defaults for the params that were not given.
//
// Usage:
//
//	jujuschema check <charmcraft.yaml>
//	    exit 0 when every action schema loads and every action's defaults satisfy it;
//	    else one line per problem on stderr, exit 1.
//	jujuschema validate <charmcraft.yaml> <action> '<params-json>'
//	    the params with defaults inserted, as one JSON object on stdout, exit 0;
//	    exit 1 with a one-line reason on stderr when Juju would refuse the params.
//
// Exit 2: usage errors, an unreadable file, no such action, params that are not a JSON object.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/juju/charm/v12"
	"gopkg.in/yaml.v2"
)

const usage = `usage:
  jujuschema check <charmcraft.yaml>
  jujuschema validate <charmcraft.yaml> <action> '<params-json>'`

// usageError is bad input to this program itself (exit 2), not a refusal by Juju (exit 1).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch {
	case args[0] == "check" && len(args) == 2:
		err = check(args[1], stdout)
	case args[0] == "validate" && len(args) == 4:
		err = validate(args[1], args[2], args[3], stdout)
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, oneLine(err.Error()))
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

// oneLine keeps a message on one line, so callers can show it as it is.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}

// project is what jujuschema reads of charmcraft.yaml.
type project struct {
	name    string
	actions []byte // the `actions` mapping as the actions.yaml charmcraft would write
}

func readProject(path string) (project, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return project{}, usageError{fmt.Sprintf("cannot read %s: %v", path, err)}
	}
	var doc map[string]interface{}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return project{}, usageError{fmt.Sprintf("%s is not valid YAML: %v", path, err)}
	}
	name, _ := doc["name"].(string)
	if name == "" {
		return project{}, usageError{fmt.Sprintf("%s has no charm `name`", path)}
	}
	actions, ok := doc["actions"]
	if !ok || actions == nil {
		return project{name: name}, nil
	}
	out, err := yaml.Marshal(actions)
	if err != nil {
		return project{}, usageError{fmt.Sprintf("%s: cannot re-encode `actions`: %v", path, err)}
	}
	return project{name: name, actions: out}, nil
}

// loadActions reads the action specs exactly as Juju reads a charm's actions.yaml.
func loadActions(path string) (*charm.Actions, error) {
	p, err := readProject(path)
	if err != nil {
		return nil, err
	}
	if p.actions == nil {
		return &charm.Actions{ActionSpecs: map[string]charm.ActionSpec{}}, nil
	}
	actions, err := charm.ReadActionsYaml(p.name, bytes.NewReader(p.actions))
	if err != nil {
		return nil, fmt.Errorf("%s: Juju refuses the actions: %v", path, err)
	}
	return actions, nil
}

func check(path string, stdout io.Writer) error {
	actions, err := loadActions(path)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(actions.ActionSpecs))
	for name := range actions.ActionSpecs {
		names = append(names, name)
	}
	sort.Strings(names)
	// Juju does not check defaults against their own schema (it inserts them after
	// validating the given params); a default the schema refuses would reach the charm.
	var problems []string
	for _, name := range names {
		spec := actions.ActionSpecs[name]
		defaults, err := spec.InsertDefaults(map[string]interface{}{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("action %s: cannot insert defaults: %v", name, err))
			continue
		}
		if err := spec.ValidateParams(defaults); err != nil {
			problems = append(problems, fmt.Sprintf("action %s: its defaults fail its own schema: %v", name, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(stdout, "ok: %d action schemas load (%s)\n", len(names), strings.Join(names, ", "))
	return nil
}

func validate(path, action, paramsJSON string, stdout io.Writer) error {
	actions, err := loadActions(path)
	if err != nil {
		if _, ok := err.(usageError); ok {
			return err
		}
		return usageError{err.Error()}
	}
	spec, ok := actions.ActionSpecs[action]
	if !ok {
		known := make([]string, 0, len(actions.ActionSpecs))
		for name := range actions.ActionSpecs {
			known = append(known, name)
		}
		sort.Strings(known)
		return usageError{fmt.Sprintf("no action %q in %s (actions: %s)", action, path, strings.Join(known, ", "))}
	}
	// The controller decodes the params it is sent as JSON (numbers become float64).
	var params map[string]interface{}
	decoder := json.NewDecoder(strings.NewReader(paramsJSON))
	if err := decoder.Decode(&params); err != nil {
		return usageError{fmt.Sprintf("params must be one JSON object: %v", err)}
	}
	if decoder.More() {
		return usageError{"params must be one JSON object, got trailing data"}
	}
	if params == nil {
		params = map[string]interface{}{}
	}
	if err := spec.ValidateParams(params); err != nil {
		return fmt.Errorf("action %s: %v", action, err)
	}
	withDefaults, err := spec.InsertDefaults(params)
	if err != nil {
		return fmt.Errorf("action %s: cannot insert defaults: %v", action, err)
	}
	out, err := json.Marshal(withDefaults)
	if err != nil {
		return fmt.Errorf("action %s: cannot encode the params: %v", action, err)
	}
	fmt.Fprintln(stdout, string(out))
	return nil
}
