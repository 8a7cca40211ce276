package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// foreignFlags are the flags README.md names for other tools, with the tool: every other
// --flag it names must be one of the operator's.
var foreignFlags = map[string]string{
	"server-side":  "kubectl apply",
	"from-literal": "kubectl create secret",
	"from-file":    "kubectl create secret",
	"namespace":    "kubectl",
	"build-arg":    "docker buildx build",
	"platform":     "docker buildx build",
	"index":        "crane push",
	"ca-file":      "hack/image",
	"dir":          "hack/controlplane, hack/build-controlplane.sh",
	"for":          "kubectl wait",
	"timeout":      "kubectl wait",
}

// TestREADMENamesRealCommandsAndFlags checks the READMEs against the cobra tree: every
// `operator <command> [<subcommand>]` they show in code exists, and every --flag README.md
// names (and every --flag kinds/README.md shows beside an operator command) is a flag of
// some operator command, or one of foreignFlags. A renamed or removed command or flag fails
// here until the README says the new name.
func TestREADMENamesRealCommandsAndFlags(t *testing.T) {
	root := newRootCommand()
	flags := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	for _, file := range []string{"../../README.md", "../../kinds/README.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		spans := codeSpans(text)
		commands := 0
		for _, span := range spans {
			for _, words := range operatorInvocations(span) {
				commands++
				if _, err := findCommand(root, words); err != nil {
					t.Errorf("%s: `operator %s`: %v", file, strings.Join(words, " "), err)
				}
			}
		}
		if commands == 0 {
			t.Errorf("%s: no `operator <command>` found: the extraction is broken", file)
		}

		var named []string
		if strings.HasSuffix(file, "kinds/README.md") {
			// its other flags are the chain binaries' (luxd, mpcd): only those shown
			// beside an operator command are ours
			for _, span := range spans {
				if len(operatorInvocations(span)) > 0 {
					named = append(named, flagNames(span)...)
				}
			}
		} else {
			named = flagNames(text)
		}
		if len(named) == 0 {
			t.Errorf("%s: no --flag found: the extraction is broken", file)
		}
		for _, name := range named {
			if !flagExists(flags, name) && foreignFlags[name] == "" {
				t.Errorf("%s: --%s is no flag of any operator command (nor listed in foreignFlags)", file, name)
			}
		}
	}
}

var (
	fencedRE   = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	inlineRE   = regexp.MustCompile("`([^`\n]+)`")
	operatorRE = regexp.MustCompile(`(?m)(?:^|[\s/(])operator((?: [a-z][a-z0-9-]*)+)`)
	flagRE     = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9-]*)`)
)

// codeSpans are a markdown text's fenced blocks (one span per line, shell comments cut)
// and inline code spans: where a README shows what to type.
func codeSpans(text string) []string {
	var spans []string
	for _, m := range fencedRE.FindAllStringSubmatch(text, -1) {
		for _, line := range strings.Split(m[1], "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			spans = append(spans, line)
		}
	}
	for _, m := range inlineRE.FindAllStringSubmatch(fencedRE.ReplaceAllString(text, ""), -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// operatorInvocations are the words after each `operator` a span invokes.
func operatorInvocations(span string) [][]string {
	var out [][]string
	for _, m := range operatorRE.FindAllStringSubmatch(span, -1) {
		out = append(out, strings.Fields(m[1]))
	}
	return out
}

// findCommand descends from root along words: the first must be a command, each further
// word a subcommand if the command has one of that name (else it is an argument, which a
// command group that does not run itself has none of).
func findCommand(root *cobra.Command, words []string) (*cobra.Command, error) {
	c, rest, err := root.Find(words[:1])
	if err != nil || c == root || len(rest) > 0 {
		return nil, errNoCommand(words[0])
	}
	for _, w := range words[1:] {
		next := subcommand(c, w)
		if next == nil && c.HasSubCommands() && !c.Runnable() {
			return nil, errNoCommand(c.Name() + " " + w)
		}
		if next == nil {
			break
		}
		c = next
	}
	return c, nil
}

func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

type errNoCommand string

func (e errNoCommand) Error() string { return "no command " + string(e) }

// flagNames are the --flags a text names, sorted and unique; `--deploy-plane-*` names a
// prefix and keeps its trailing dash.
func flagNames(text string) []string {
	seen := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
		seen[m[1]] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func flagExists(flags map[string]bool, name string) bool {
	if !strings.HasSuffix(name, "-") {
		return flags[name]
	}
	for f := range flags {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}
