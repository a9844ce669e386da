package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// BudgetFlag is a repeatable flag of NAME=N budgets in Unit (profiler
// bench's --max-tokens and --max-bytes), collected into one List.
type BudgetFlag struct {
	Unit Unit
	List *[]Budget
}

func (b BudgetFlag) String() string {
	if b.List == nil {
		return ""
	}
	var parts []string
	for _, x := range *b.List {
		if x.Unit == b.Unit {
			parts = append(parts, x.Profile+"="+strconv.Itoa(x.Limit))
		}
	}
	return strings.Join(parts, ",")
}

func (b BudgetFlag) Set(v string) error {
	what := "o200k_base tokens"
	if b.Unit == UnitBytes {
		what = "bytes"
	}
	name, n, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=N, e.g. core=2000", v)
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 0 {
		return fmt.Errorf("%q: N must be a whole number of %s, e.g. %s=2000", v, what, name)
	}
	for _, x := range *b.List {
		if x.Profile == name && x.Unit == b.Unit {
			return fmt.Errorf("%q: profile %q already has a budget in %s", v, name, what)
		}
	}
	*b.List = append(*b.List, Budget{Profile: name, Unit: b.Unit, Limit: limit})
	return nil
}
