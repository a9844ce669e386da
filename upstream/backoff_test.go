package upstream

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Options{Backoff: Backoff{Initial: 100 * time.Millisecond, Max: time.Second}}.withDefaults().Backoff
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second}, // capped
		{60, time.Second},
	} {
		if got := b.Delay(tt.failures); got != tt.want {
			t.Errorf("Delay(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
	d := Options{}.withDefaults().Backoff
	if d.Initial != 100*time.Millisecond || d.Max != 30*time.Second {
		t.Errorf("default backoff = %+v", d)
	}
}
