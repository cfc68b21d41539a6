package criticality_test

import (
	"context"
	"fmt"

	"github.com/fairseat/fairseat/criticality"
)

// A batch job marks its calls sheddable; the client interceptors and
// transport send the level with every call made with the context.
func ExampleNewContext() {
	ctx := criticality.NewContext(context.Background(), criticality.Sheddable)
	l, ok := criticality.FromContext(ctx)
	fmt.Println(l, ok)
	// Output: sheddable true
}

// A server reads the level a caller stated; anything that is not a level is
// ignored (treated as critical) by fairseat's adapters.
func ExampleParse() {
	for _, s := range []string{"critical_plus", "SHEDDABLE", "urgent"} {
		l, err := criticality.Parse(s)
		fmt.Println(l, err)
	}
	// Output:
	// critical_plus <nil>
	// sheddable <nil>
	// critical criticality: not a level: "urgent"
}
