// Command promql checks PromQL expressions with Prometheus's own parser. It reads one JSON
// string per line on stdin (an expression) and writes one JSON object per line on stdout:
// {"error": "..."} when the expression does not parse, otherwise {"metrics": [...]}, the metric
// names its vector selectors select, sorted and without repeats.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Error   string   `json:"error,omitempty"`
	Metrics []string `json:"metrics,omitempty"`
}

// The default options: the functions and syntax a stock Prometheus server accepts.
var promql = parser.NewParser(parser.Options{})

func check(expr string) result {
	node, err := promql.ParseExpr(expr)
	if err != nil {
		return result{Error: err.Error()}
	}
	seen := map[string]bool{}
	for _, selectors := range parser.ExtractSelectors(node) {
		for _, matcher := range selectors {
			if matcher.Name == labels.MetricName && matcher.Type == labels.MatchEqual {
				seen[matcher.Value] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return result{Metrics: names}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		line := in.Bytes()
		if len(line) == 0 {
			continue
		}
		var expr string
		var res result
		if err := json.Unmarshal(line, &expr); err != nil {
			res = result{Error: fmt.Sprintf("input line is not a JSON string: %v", err)}
		} else {
			res = check(expr)
		}
		if err := encoder.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
