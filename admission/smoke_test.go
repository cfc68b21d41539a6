package admission

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestSmokeSeedScenario4(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Capacity: 8})
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.RegisterType("sync-clone", JobTypeConfig{MaxConcurrency: 8, ConflictGroup: "git", Priority: 8, DefaultCost: 10 * time.Second}))
		must(t, s.RegisterType("repack", JobTypeConfig{MaxConcurrency: 3, ConflictGroup: "git", Priority: 4, DefaultCost: 20 * time.Second}))
		start := time.Now()
		var mu sync.Mutex
		var log []string
		rec := func(what string) {
			mu.Lock()
			log = append(log, what+"@"+time.Since(start).String())
			mu.Unlock()
		}
		var wg sync.WaitGroup
		for _, repo := range []string{"repo1", "repo2"} {
			wg.Go(func() {
				err := s.RunSync(t.Context(), "sync-clone", repo, "dev-"+repo, func(ctx context.Context) error {
					rec("clone " + repo)
					time.Sleep(3 * time.Second)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
			synctest.Wait()
			must(t, s.Submit("repack", repo, func(ctx context.Context) error {
				rec("repack " + repo)
				time.Sleep(4 * time.Second)
				return nil
			}))
		}
		synctest.Wait()
		checkInvariants(t, s)
		wg.Wait()
		must(t, s.Close(t.Context()))
		checkInvariants(t, s)
		t.Log(log)
		if len(log) != 4 {
			t.Fatalf("log = %v", log)
		}
		snap := s.Snapshot()
		if snap.Counters.Completed != 4 || snap.InUse != 0 {
			t.Fatalf("counters %+v", snap.Counters)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
