package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The callers of the demo.
const (
	clientHeavy      = "heavy"      // a CI farm that starts 1000 clones at once
	clientLight      = "light"      // a developer cloning a few repositories, one after another
	clientUser       = "user"       // someone who triggers a burst of fetches midway
	clientBackground = "background" // the server's own maintenance: repacks and pulls
)

// clients lists the callers in the order of the table and the chart.
var clients = []string{clientHeavy, clientLight, clientUser, clientBackground}

// repositories is the git cache's catalogue: how long a clone of each takes.
// A fetch takes a quarter of that, a pull half, a repack twice as long.
var repositories = []struct {
	name  string
	clone time.Duration
}{
	{"github.com/torvalds/linux", 1200 * time.Millisecond},
	{"github.com/kubernetes/kubernetes", 500 * time.Millisecond},
	{"github.com/golang/go", 400 * time.Millisecond},
	{"github.com/git/git", 200 * time.Millisecond},
	{"github.com/grpc/grpc-go", 150 * time.Millisecond},
	{"github.com/spf13/pflag", 40 * time.Millisecond},
	{"github.com/google/uuid", 30 * time.Millisecond},
	{"github.com/pkg/errors", 30 * time.Millisecond},
	{"github.com/mattn/go-isatty", 30 * time.Millisecond},
	{"github.com/fatih/color", 40 * time.Millisecond},
	{"github.com/BurntSushi/toml", 50 * time.Millisecond},
	{"github.com/cespare/xxhash", 30 * time.Millisecond},
	{"github.com/google/go-cmp", 50 * time.Millisecond},
	{"github.com/rs/xid", 30 * time.Millisecond},
	{"github.com/kr/pretty", 30 * time.Millisecond},
	{"github.com/davecgh/go-spew", 40 * time.Millisecond},
	{"github.com/pmezard/go-difflib", 30 * time.Millisecond},
	{"github.com/golang/groupcache", 40 * time.Millisecond},
	{"github.com/hashicorp/golang-lru", 40 * time.Millisecond},
	{"github.com/fairseat/fairseat", 30 * time.Millisecond},
}

// cloneTime is how long a clone of repo takes.
func cloneTime(repo string) time.Duration {
	for _, r := range repositories {
		if r.name == repo {
			return r.clone
		}
	}
	return 50 * time.Millisecond
}

// A plan is the load of one run, drawn from the seed, so that both runs see
// exactly the same requests at the same moments.
type plan struct {
	heavy       []string      // the heavy client's clones, all sent at the start
	light       []string      // the light client's clones, one after another
	lightStart  time.Duration // when the light client begins
	lightPause  time.Duration // how long it waits between two clones
	burst       []string      // the user's fetches, all sent at burstAt
	burstAt     time.Duration
	maintenance []maintenance // background jobs the server queues
}

type maintenance struct {
	at   time.Duration
	op   string // jobRepack or jobPull
	repo string
}

func newPlan(cfg config) plan {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0))
	pick := func() string { return repositories[rng.IntN(len(repositories))].name }
	p := plan{
		lightStart: cfg.Duration / 20,
		lightPause: cfg.Duration / 40,
		burstAt:    cfg.Duration / 2,
	}
	for range cfg.HeavyClones {
		p.heavy = append(p.heavy, pick())
	}
	// The light client clones small and medium repositories.
	for range cfg.LightClones {
		p.light = append(p.light, repositories[3+rng.IntN(len(repositories)-3)].name)
	}
	for range cfg.BurstFetches {
		p.burst = append(p.burst, pick())
	}
	// Every tick the server pulls one of the big repositories from upstream,
	// and every other tick it repacks one.
	tick := cfg.Duration / 20
	for i := 1; i < 20; i++ {
		at := time.Duration(i) * tick
		p.maintenance = append(p.maintenance, maintenance{at, jobPull, repositories[i%5].name})
		if i%2 == 0 {
			p.maintenance = append(p.maintenance, maintenance{at, jobRepack, repositories[(i/2)%5].name})
		}
	}
	return p
}

// loadClients are the connections of the demo's callers.
type loadClients struct {
	heavy, light, user *grpc.ClientConn
}

// play sends the plan's load to the server until ctx ends, starting now.
// Requests still waiting when ctx ends are cancelled. It returns the
// errors that were not cancellations: there should be none.
func play(ctx context.Context, p plan, cc loadClients, srv *gitServer) []error {
	start := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []error
	)
	call := func(conn *grpc.ClientConn, client, method, repo string) {
		ctx := metadata.AppendToOutgoingContext(ctx, clientMetadata, client)
		err := conn.Invoke(ctx, method, wrapperspb.String(repo), new(emptypb.Empty))
		switch status.Code(err) {
		case codes.OK, codes.Canceled, codes.DeadlineExceeded:
		default:
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
	}
	// waitUntil sleeps until offset at from the start; false if ctx ended.
	waitUntil := func(at time.Duration) bool {
		t := time.NewTimer(time.Until(start.Add(at)))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	goDo := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}

	for _, repo := range p.heavy {
		goDo(func() { call(cc.heavy, clientHeavy, cloneMethod, repo) })
	}
	goDo(func() {
		if !waitUntil(p.lightStart) {
			return
		}
		for _, repo := range p.light {
			call(cc.light, clientLight, cloneMethod, repo)
			t := time.NewTimer(p.lightPause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	})
	goDo(func() {
		if !waitUntil(p.burstAt) {
			return
		}
		for _, repo := range p.burst {
			goDo(func() { call(cc.user, clientUser, fetchMethod, repo) })
		}
	})
	goDo(func() {
		for _, m := range p.maintenance {
			if !waitUntil(m.at) {
				return
			}
			if m.op == jobRepack {
				srv.repack(m.repo)
			} else {
				srv.pull(m.repo)
			}
		}
	})
	wg.Wait()
	return failures
}
