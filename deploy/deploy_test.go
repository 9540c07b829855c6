package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/test/env"
)

const (
	rulesFile     = "prometheus/kernelet-alerts.yaml"
	rulesTestFile = "prometheus/kernelet-alerts.test.yaml"
	dashboardFile = "grafana/kernelet-dashboard.json"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	env.Require(t, err == nil, "promtool (Debian package prometheus; hack/deps.sh metrics)")
	return p
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// The alert rules are valid and fire as their unit tests say.
func TestAlertRules(t *testing.T) {
	p := promtool(t)
	run(t, ".", p, "check", "rules", rulesFile)
	run(t, filepath.Dir(rulesTestFile), p, "test", "rules", filepath.Base(rulesTestFile))
}

// Every dashboard query is valid PromQL once Grafana's variables are
// substituted: promtool checks them as recording rules.
func TestDashboardQueriesParse(t *testing.T) {
	p := promtool(t)
	d := loadDashboard(t)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, q := range d.queries() {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel%d:%s", q.panel, q.ref), Expr: grafanaVars.Replace(q.expr)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", p, "check", "rules", f)
}

// Every metric the dashboard and the rules name is one kernelet exports.
func TestQueriesNameExportedMetrics(t *testing.T) {
	names, err := agent.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, ns := range names {
		for _, n := range ns {
			exported[n] = true
		}
	}
	var exprs []string
	for _, q := range loadDashboard(t).queries() {
		exprs = append(exprs, q.expr)
	}
	exprs = append(exprs, ruleExprs(t)...)
	used := 0
	for _, e := range exprs {
		for _, m := range metricNames(e) {
			used++
			base := m
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suf); ok && exported[b] {
					base = b
				}
			}
			if !exported[base] {
				t.Errorf("%q names %s, which kernelet does not export", e, m)
			}
		}
	}
	if used == 0 {
		t.Fatal("no metric names found in the queries")
	}
}

func TestMetricNamesExtraction(t *testing.T) {
	cases := map[string][]string{
		`rate(a_total{x="y{z}",le!=""}[5m])`:                                   {"a_total"},
		`histogram_quantile(0.99, sum by (instance, le) (rate(h_bucket[5m])))`: {"h_bucket"},
		`a / on(instance) group_left(node) b > 0.9 or c unless d`:              {"a", "b", "c", "d"},
		`time() - x_seconds > 180`:                                             {"x_seconds"},
		`label_values(kubelet_node_name, instance)`:                            {"kubelet_node_name"},
		`topk(10, sum without (id) (m{i=~"$instance"}))`:                       {"m"},
	}
	for in, want := range cases {
		if got := metricNames(in); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", in, got, want)
		}
	}
}

// grafanaVars replaces Grafana's variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$__interval", "1m", "$instance", ".*")

type dashboard struct {
	Panels []struct {
		ID      int `json:"id"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type query struct {
	panel     int
	ref, expr string
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if len(d.Panels) == 0 {
		t.Fatalf("%s: no panels", dashboardFile)
	}
	return &d
}

// queries are the panels' targets (the template variables' label_values
// queries are checked for their metric only).
func (d *dashboard) queries() []query {
	var out []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{panel: p.ID, ref: tg.RefID, expr: tg.Expr})
		}
	}
	return out
}

func ruleExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Expr string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil { // the schema is promtool's to check
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

var (
	stringLit  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers   = regexp.MustCompile(`\{[^{}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\]]*\]`)
	labelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	labelValue = regexp.MustCompile(`\blabel_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,[^)]*\)`)
	ident      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	keywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}
)

// metricNames are the metric names a PromQL expression selects: the
// identifiers outside label matchers, label lists, ranges and strings
// that are neither functions nor keywords.
func metricNames(expr string) []string {
	e := labelValue.ReplaceAllString(expr, "$1")
	e = stringLit.ReplaceAllString(e, `""`)
	for matchers.MatchString(e) {
		e = matchers.ReplaceAllString(e, " ")
	}
	e = ranges.ReplaceAllString(e, " ")
	e = labelLists.ReplaceAllString(e, " ")
	var out []string
	for _, m := range ident.FindAllString(e, -1) {
		name := strings.TrimSpace(m)
		if strings.HasSuffix(m, "(") || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}
