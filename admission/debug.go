package admission

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

// DebugHandler returns an http.Handler that shows s's [Scheduler.Snapshot]:
// seats in use, tiers and job types, the queue in dispatch order, the active
// fairness keys with their virtual times, the learned cost estimates and the
// counters. It answers GET and HEAD only (405 otherwise):
//
//   - without a format parameter (or with format=html), a self-contained
//     HTML page (inline CSS and script, no external assets, works offline)
//     that refreshes itself every second from ?format=json, and reloads
//     every 5 seconds when scripts are off;
//   - with format=json, the snapshot as JSON. Field names are the Snapshot's
//     in snake_case and are stable; every duration appears twice, as
//     seconds (a number, name ending in _seconds) and as text in Go's
//     duration syntax rounded to the millisecond; virtual times are in
//     seconds. Any other format is answered with 400.
//
// Security: the page and the JSON expose fairness keys (client addresses,
// tenants, identities) and job IDs (the resources callers work on). Like
// net/http/pprof, mount the handler only behind the operator's own access
// control, never on a public listener. It escapes everything it shows and
// sends a Content-Security-Policy that allows only its own inline script and
// style and requests to its own origin.
//
// Each request takes one Snapshot, with its cost under the scheduler's lock
// (see Snapshot); a page left open costs one per second. The handler is safe
// for concurrent use. DebugHandler panics if s is nil.
func DebugHandler(s *Scheduler) http.Handler {
	if s == nil {
		panic("admission: DebugHandler of a nil *Scheduler")
	}
	return debugHandler{s}
}

type debugHandler struct{ s *Scheduler }

func (h debugHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method "+r.Method+" not allowed: use GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "html" {
		http.Error(w, fmt.Sprintf("unknown format %q: use format=json, or no format for the HTML page", format), http.StatusBadRequest)
		return
	}
	snap := debugView(h.s.Snapshot())
	var buf bytes.Buffer
	var err error
	if format == "json" {
		enc := json.NewEncoder(&buf) // escapes <, > and & in strings
		enc.SetIndent("", "  ")
		err = enc.Encode(snap)
	} else {
		err = debugPage.Execute(&buf, snap)
	}
	if err != nil { // a bug in this file: the data is plain values
		http.Error(w, "admission: rendering the debug page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if format == "json" {
		hd.Set("Content-Type", "application/json")
	} else {
		hd.Set("Content-Type", "text/html; charset=utf-8")
		hd.Set("Content-Security-Policy", debugCSP)
	}
	w.Write(buf.Bytes())
}

// debugSnapshot is the JSON form of a Snapshot (see DebugHandler); the HTML
// page renders the same values, so the first render and the script's agree.
type debugSnapshot struct {
	Time                 time.Time      `json:"time"`
	Capacity             int            `json:"capacity"`
	InUse                int            `json:"in_use"`
	Queued               int            `json:"queued"`
	SystemVirtualSeconds float64        `json:"system_virtual_seconds"`
	Types                []debugType    `json:"types"`
	Tiers                []debugTier    `json:"tiers"`
	ActiveKeys           int            `json:"active_keys"`
	Keys                 []debugKey     `json:"keys"`
	Queue                []debugQueued  `json:"queue"`
	Counters             debugCounters  `json:"counters"`
	Adaptive             *debugAdaptive `json:"adaptive"`
}

type debugType struct {
	Type               JobType       `json:"type"`
	Priority           Priority      `json:"priority"`
	MaxConcurrency     int           `json:"max_concurrency"` // the limit now; 0 = no cap
	Paused             bool          `json:"paused"`
	ConflictGroup      ConflictGroup `json:"conflict_group"`
	MaxWaitSeconds     float64       `json:"max_wait_seconds"` // 0 = until the caller's context ends
	MaxWait            string        `json:"max_wait"`
	Running            int           `json:"running"`
	Queued             int           `json:"queued"`
	DefaultCostSeconds float64       `json:"default_cost_seconds"`
	DefaultCost        string        `json:"default_cost"`
	LearnedCosts       int           `json:"learned_costs"`
	MeanCostSeconds    float64       `json:"mean_cost_seconds"`
	MeanCost           string        `json:"mean_cost"`
}

type debugTier struct {
	Priority Priority `json:"priority"`
	Limit    int      `json:"limit"`
	Running  int      `json:"running"`
	Queued   int      `json:"queued"`
}

type debugKey struct {
	Key            string  `json:"key"` // "" = background jobs
	Weight         float64 `json:"weight"`
	VirtualSeconds float64 `json:"virtual_seconds"`
	Running        int     `json:"running"`
	Queued         int     `json:"queued"`
	MinSeats       int     `json:"min_seats"`
	Share          float64 `json:"share"` // running / in_use, 0 when no seat is in use
	Paused         bool    `json:"paused"`
}

type debugQueued struct {
	Type              JobType  `json:"type"`
	JobID             string   `json:"job_id"`
	Key               string   `json:"key"`
	BasePriority      Priority `json:"base_priority"`
	EffectivePriority Priority `json:"effective_priority"`
	Urgent            bool     `json:"urgent"`
	WaitSeconds       float64  `json:"wait_seconds"`
	Wait              string   `json:"wait"`
	BlockedBy         string   `json:"blocked_by"` // "" = only its place in the order
}

type debugCounters struct {
	Submitted           uint64 `json:"submitted"`
	Admitted            uint64 `json:"admitted"`
	Completed           uint64 `json:"completed"`
	Failed              uint64 `json:"failed"`
	RejectedQueueFull   uint64 `json:"rejected_queue_full"`
	PushedOut           uint64 `json:"pushed_out"`
	RejectedWaitTimeout uint64 `json:"rejected_wait_timeout"`
	RejectedClosed      uint64 `json:"rejected_closed"`
	Cancelled           uint64 `json:"cancelled"`
	Dropped             uint64 `json:"dropped"`
	AgingPromotions     uint64 `json:"aging_promotions"`
	UrgentAdmissions    uint64 `json:"urgent_admissions"`
	Exempt              uint64 `json:"exempt"`
	Expired             uint64 `json:"expired"`
	Coalesced           uint64 `json:"coalesced"`
	Superseded          uint64 `json:"superseded"`
	Retried             uint64 `json:"retried"`
	DryRunWaits         uint64 `json:"dry_run_waits"`
	RejectedDeadline    uint64 `json:"rejected_deadline"`
	EventsDropped       uint64 `json:"events_dropped"`
	CostEntriesLoaded   uint64 `json:"cost_entries_loaded"`
	CostEntriesSkipped  uint64 `json:"cost_entries_skipped"`
	CostSaves           uint64 `json:"cost_saves"`
	CostEntriesSaved    uint64 `json:"cost_entries_saved"`
	CostLoadFailures    uint64 `json:"cost_load_failures"`
	CostSaveFailures    uint64 `json:"cost_save_failures"`
	RejectedOverload    uint64 `json:"rejected_overload"`
	PressureFailures    uint64 `json:"pressure_failures"`
}

// debugAdaptive is adaptive capacity's part of the JSON (null when the
// capacity is fixed).
type debugAdaptive struct {
	Limit     float64               `json:"limit"`
	Min       int                   `json:"min"`
	Max       int                   `json:"max"`
	Inflation float64               `json:"inflation"`
	Baseline  float64               `json:"baseline"`
	Noise     float64               `json:"noise"`
	Samples   uint64                `json:"samples"`
	Weak      uint64                `json:"weak_samples"`
	Shedding  bool                  `json:"shedding"`
	Probing   bool                  `json:"probing"`
	Held      bool                  `json:"held"`
	History   []debugCapacityChange `json:"history"` // newest first
	// Loaded is the limit New started from, loaded from a CapacityStore
	// (0: none; CostStoreSnapshot.LoadedCapacity).
	Loaded int `json:"loaded_capacity"`
}

type debugCapacityChange struct {
	Time     time.Time      `json:"time"`
	Previous int            `json:"previous"`
	New      int            `json:"new"`
	Reason   CapacityReason `json:"reason"`
}

// debugDuration is a duration as text, rounded to the millisecond.
func debugDuration(d time.Duration) string { return d.Round(time.Millisecond).String() }

// debugView converts a Snapshot to its JSON form. Empty lists stay lists
// ([] rather than null), so the page's script needs no special case.
func debugView(s Snapshot) debugSnapshot {
	v := debugSnapshot{
		Time: s.Time, Capacity: s.Capacity, InUse: s.InUse, Queued: s.Queued,
		SystemVirtualSeconds: s.SystemVirtual, ActiveKeys: s.ActiveKeys,
		Types: make([]debugType, 0, len(s.Types)), Tiers: make([]debugTier, 0, len(s.Tiers)),
		Keys: make([]debugKey, 0, len(s.Keys)), Queue: make([]debugQueued, 0, len(s.Queue)),
		Counters: debugCounters(s.Counters),
	}
	if a := s.Adaptive; a != nil {
		v.Adaptive = &debugAdaptive{Limit: a.Limit, Min: a.Min, Max: a.Max, Inflation: a.Inflation, Baseline: a.Baseline,
			Noise: a.Noise, Samples: a.Samples, Weak: a.Weak, Shedding: a.Shedding, Probing: a.Probing, Held: a.Held,
			History: make([]debugCapacityChange, 0, len(a.History)), Loaded: s.CostStore.LoadedCapacity}
		for i := len(a.History) - 1; i >= 0; i-- {
			v.Adaptive.History = append(v.Adaptive.History, debugCapacityChange(a.History[i]))
		}
	}
	for _, t := range s.Types {
		c := t.Config
		v.Types = append(v.Types, debugType{
			Type: t.Type, Priority: c.Priority, MaxConcurrency: t.Limit, Paused: t.Paused, ConflictGroup: c.ConflictGroup,
			MaxWaitSeconds: c.MaxWait.Seconds(), MaxWait: debugDuration(c.MaxWait),
			Running: t.Running, Queued: t.Queued,
			DefaultCostSeconds: c.DefaultCost.Seconds(), DefaultCost: debugDuration(c.DefaultCost),
			LearnedCosts: t.LearnedCosts, MeanCostSeconds: t.MeanCost.Seconds(), MeanCost: debugDuration(t.MeanCost),
		})
	}
	for _, t := range s.Tiers {
		v.Tiers = append(v.Tiers, debugTier(t))
	}
	for _, k := range s.Keys {
		share := 0.0
		if s.InUse > 0 {
			share = float64(k.Running) / float64(s.InUse)
		}
		v.Keys = append(v.Keys, debugKey{Key: k.Key, Weight: k.Weight, VirtualSeconds: k.VirtualTime,
			Running: k.Running, Queued: k.Queued, MinSeats: k.MinSeats, Share: share, Paused: k.Paused})
	}
	for _, q := range s.Queue {
		v.Queue = append(v.Queue, debugQueued{
			Type: q.Type, JobID: q.JobID, Key: q.Key, BasePriority: q.BasePriority,
			EffectivePriority: q.EffectivePriority, Urgent: q.Urgent,
			WaitSeconds: q.Wait.Seconds(), Wait: debugDuration(q.Wait), BlockedBy: q.BlockedBy,
		})
	}
	return v
}

// debugCounter is one row of the page's counters table.
type debugCounter struct {
	Name  string
	Value uint64
}

// List is the counters under their JSON names, in field order: the rows the
// first render shows and the script shows again from the JSON object.
func (c debugCounters) List() []debugCounter {
	return []debugCounter{
		{"submitted", c.Submitted}, {"admitted", c.Admitted}, {"completed", c.Completed},
		{"failed", c.Failed}, {"rejected_queue_full", c.RejectedQueueFull}, {"pushed_out", c.PushedOut},
		{"rejected_wait_timeout", c.RejectedWaitTimeout}, {"rejected_closed", c.RejectedClosed},
		{"cancelled", c.Cancelled}, {"dropped", c.Dropped}, {"aging_promotions", c.AgingPromotions},
		{"urgent_admissions", c.UrgentAdmissions}, {"exempt", c.Exempt},
		{"expired", c.Expired}, {"coalesced", c.Coalesced}, {"superseded", c.Superseded}, {"retried", c.Retried},
		{"dry_run_waits", c.DryRunWaits}, {"rejected_deadline", c.RejectedDeadline},
		{"events_dropped", c.EventsDropped},
		{"cost_entries_loaded", c.CostEntriesLoaded}, {"cost_entries_skipped", c.CostEntriesSkipped},
		{"cost_saves", c.CostSaves}, {"cost_entries_saved", c.CostEntriesSaved},
		{"cost_load_failures", c.CostLoadFailures}, {"cost_save_failures", c.CostSaveFailures},
		{"rejected_overload", c.RejectedOverload}, {"pressure_failures", c.PressureFailures},
	}
}

// The page's inline style and script are constants, so the
// Content-Security-Policy can allow exactly them by hash and nothing else
// (no inline event handlers, no injected script, no other origin).
var debugCSP = "default-src 'none'; " +
	"script-src '" + cspHash(debugScript) + "'; " +
	"style-src '" + cspHash(debugStyle) + "'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

var debugPage = template.Must(template.New("debug").Funcs(template.FuncMap{
	"secs":   func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"pct":    func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"index1": func(i int) int { return i + 1 },
}).Parse(debugHead + "<style>" + debugStyle + "</style>" + debugBody + "<script>" + debugScript + "</script>\n</body>\n</html>\n"))

// debugHead and debugBody are the page around the style and the script. The
// script fills the same element ids the first render fills; "—" stands for
// an empty value in both.
const debugHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<noscript><meta http-equiv="refresh" content="5"></noscript>
<title>fairseat admission</title>
`

const debugBody = `
</head>
<body>
<header>
<h1>fairseat admission</h1>
<p id="status" data-state="static">Snapshot of {{.Time.Format "2006-01-02 15:04:05.000 MST"}}, rendered by the server. Without scripts this page reloads every 5 s.</p>
</header>

<section id="seats">
<h2>Seats</h2>
<p><meter id="seat-meter" min="0" max="{{.Capacity}}" value="{{.InUse}}"></meter>
<b><span id="in-use">{{.InUse}}</span> / <span id="capacity">{{.Capacity}}</span></b> seats in use,
<b id="queued">{{.Queued}}</b> queued, system virtual time <b id="vsys">{{secs .SystemVirtualSeconds}}</b> s.</p>
<p id="adaptive-line">{{with .Adaptive}}Adaptive capacity: limit <b>{{printf "%.1f" .Limit}}</b> in [{{.Min}}, {{.Max}}], inflation {{printf "%.2f" .Inflation}} (baseline {{printf "%.2f" .Baseline}}, noise {{printf "%.2f" .Noise}}), {{.Samples}} samples, {{.Weak}} without a reference{{if .Probing}}, probing (limit halved for a round){{end}}{{if .Held}}, held (no growth until a probe){{end}}{{if .Shedding}}, <b>shedding the heaviest keys' arrivals</b>{{end}}.{{if .Loaded}} Started at {{.Loaded}} seats, the limit loaded from the cost store.{{end}}{{else}}Fixed capacity.{{end}}</p>
<table><thead><tr><th>Limit changed at</th><th>From</th><th>To</th><th>Reason</th></tr></thead>
<tbody id="history-body">{{with .Adaptive}}{{range .History}}
<tr><td>{{.Time.Format "15:04:05.000"}}</td><td>{{.Previous}}</td><td>{{.New}}</td><td>{{.Reason}}</td></tr>{{else}}
<tr><td colspan="4" class="none">no change yet</td></tr>{{end}}{{else}}
<tr><td colspan="4" class="none">fixed capacity</td></tr>{{end}}
</tbody></table>
</section>

<section id="tiers">
<h2>Tiers</h2>
<table><thead><tr><th>Base priority</th><th>Running</th><th>Queued</th><th>Limit</th></tr></thead>
<tbody id="tiers-body">{{range .Tiers}}
<tr><td>{{.Priority}}</td><td>{{.Running}}</td><td>{{.Queued}}</td><td>{{.Limit}}</td></tr>{{else}}
<tr><td colspan="4" class="none">no job types registered</td></tr>{{end}}
</tbody></table>
</section>

<section id="types">
<h2>Job types</h2>
<table><thead><tr><th>Type</th><th>Priority</th><th>Running</th><th>Queued</th><th>Limit</th><th>Conflict group</th><th>Max wait</th></tr></thead>
<tbody id="types-body">{{range .Types}}
<tr><td>{{.Type}}{{if .Paused}} (paused){{end}}</td><td>{{.Priority}}</td><td>{{.Running}}</td><td>{{.Queued}}</td><td>{{if .MaxConcurrency}}{{.MaxConcurrency}}{{else}}none{{end}}</td><td>{{or .ConflictGroup "—"}}</td><td>{{if .MaxWaitSeconds}}{{.MaxWait}}{{else}}none{{end}}</td></tr>{{else}}
<tr><td colspan="7" class="none">no job types registered</td></tr>{{end}}
</tbody></table>
</section>

<section id="queue">
<h2>Queue, in dispatch order <small id="queue-note">{{if gt .Queued (len .Queue)}}(first {{len .Queue}} of {{.Queued}}){{end}}</small></h2>
<table><thead><tr><th>#</th><th>Type</th><th>Job ID</th><th>Key</th><th>Effective priority</th><th>Base priority</th><th>Urgent</th><th>Wait</th><th>Blocked by</th></tr></thead>
<tbody id="queue-body">{{range $i, $q := .Queue}}
<tr><td>{{index1 $i}}</td><td>{{.Type}}</td><td>{{.JobID}}</td>{{if .Key}}<td>{{.Key}}</td>{{else}}<td class="bg">"" (background)</td>{{end}}<td>{{.EffectivePriority}}</td><td>{{.BasePriority}}</td><td>{{if .Urgent}}urgent{{else}}—{{end}}</td><td>{{.Wait}}</td><td>{{or .BlockedBy "—"}}</td></tr>{{else}}
<tr><td colspan="9" class="none">nothing queued</td></tr>{{end}}
</tbody></table>
</section>

<section id="keys">
<h2>Fairness keys <small id="keys-note">{{if gt .ActiveKeys (len .Keys)}}(first {{len .Keys}} of {{.ActiveKeys}} active, most queued first){{end}}</small></h2>
<table><thead><tr><th>Key</th><th>Virtual time (s)</th><th>Weight</th><th>Running</th><th>Share of seats in use</th><th>Queued</th><th>Min seats</th></tr></thead>
<tbody id="keys-body">{{range .Keys}}
<tr>{{if .Key}}<td>{{.Key}}</td>{{else}}<td class="bg">"" (background)</td>{{end}}<td>{{secs .VirtualSeconds}}</td><td>{{.Weight}}</td><td>{{.Running}}</td><td>{{pct .Share}}</td><td>{{.Queued}}</td><td>{{.MinSeats}}</td></tr>{{else}}
<tr><td colspan="7" class="none">no active keys</td></tr>{{end}}
</tbody></table>
</section>

<section id="costs">
<h2>Learned costs</h2>
<table><thead><tr><th>Type</th><th>Mean estimate</th><th>Estimates tracked</th><th>Default cost</th></tr></thead>
<tbody id="costs-body">{{range .Types}}
<tr><td>{{.Type}}</td><td>{{.MeanCost}}</td><td>{{.LearnedCosts}}</td><td>{{.DefaultCost}}</td></tr>{{else}}
<tr><td colspan="4" class="none">no job types registered</td></tr>{{end}}
</tbody></table>
</section>

<section id="counters">
<h2>Counters</h2>
<table><tbody id="counters-body">{{range .Counters.List}}
<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}
</tbody></table>
</section>
`

const debugStyle = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
h2 { font-size: 1.1em; margin: 1.2em 0 .3em; }
small { font-weight: normal; color: #666; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
td { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
thead th { background: #eee; }
tbody th { background: #f6f6f6; font-weight: normal; }
td.none, td.bg { color: #666; font-style: italic; }
meter { width: 16em; vertical-align: middle; }
#status { color: #666; }
#status[data-state="live"] { color: #164; }
#status[data-state="error"] { color: #a00; font-weight: bold; }
`

// debugScript refreshes the page from ?format=json. It writes data only
// through textContent: keys and job IDs are caller input.
const debugScript = `
(function () {
  "use strict";
  function el(id) { return document.getElementById(id); }
  function set(id, v) { el(id).textContent = String(v); }
  function secs(f) { return f.toFixed(3); }
  function td(tr, v, cls) {
    var c = document.createElement("td");
    c.textContent = String(v);
    if (cls) { c.className = cls; }
    tr.appendChild(c);
  }
  function key(tr, k) {
    if (k === "") { td(tr, "\"\" (background)", "bg"); } else { td(tr, k); }
  }
  function fill(id, items, cols, empty, row) {
    var trs = items.map(function (it, i) {
      var tr = document.createElement("tr");
      row(tr, it, i);
      return tr;
    });
    if (trs.length === 0) {
      var tr = document.createElement("tr");
      td(tr, empty, "none");
      tr.firstChild.colSpan = cols;
      trs.push(tr);
    }
    el(id).replaceChildren.apply(el(id), trs);
  }
  function render(s) {
    var m = el("seat-meter");
    m.max = s.capacity;
    m.value = s.in_use;
    set("in-use", s.in_use);
    set("capacity", s.capacity);
    set("queued", s.queued);
    set("vsys", secs(s.system_virtual_seconds));
    var a = s.adaptive;
    if (a) {
      set("adaptive-line", "Adaptive capacity: limit " + a.limit.toFixed(1) + " in [" + a.min + ", " + a.max +
        "], inflation " + a.inflation.toFixed(2) + " (baseline " + a.baseline.toFixed(2) + ", noise " + a.noise.toFixed(2) + "), " + a.samples +
         " samples, " + a.weak_samples + " without a reference" + (a.probing ? ", probing (limit halved for a round)" : "") +
         (a.held ? ", held (no growth until a probe)" : "") +
        (a.shedding ? ", shedding the heaviest keys' arrivals." : ".") +
        (a.loaded_capacity ? " Started at " + a.loaded_capacity + " seats, the limit loaded from the cost store." : ""));
    } else {
      set("adaptive-line", "Fixed capacity.");
    }
    fill("history-body", a ? a.history : [], 4, a ? "no change yet" : "fixed capacity", function (tr, c) {
      td(tr, new Date(c.time).toLocaleTimeString()); td(tr, c.previous); td(tr, c.new); td(tr, c.reason);
    });
    fill("tiers-body", s.tiers, 4, "no job types registered", function (tr, t) {
      td(tr, t.priority); td(tr, t.running); td(tr, t.queued); td(tr, t.limit);
    });
    fill("types-body", s.types, 7, "no job types registered", function (tr, t) {
      td(tr, t.paused ? t.type + " (paused)" : t.type); td(tr, t.priority); td(tr, t.running); td(tr, t.queued);
      td(tr, t.max_concurrency ? t.max_concurrency : "none");
      td(tr, t.conflict_group || "\u2014");
      td(tr, t.max_wait_seconds ? t.max_wait : "none");
    });
    set("queue-note", s.queued > s.queue.length ? "(first " + s.queue.length + " of " + s.queued + ")" : "");
    fill("queue-body", s.queue, 9, "nothing queued", function (tr, q, i) {
      td(tr, i + 1); td(tr, q.type); td(tr, q.job_id); key(tr, q.key);
      td(tr, q.effective_priority); td(tr, q.base_priority);
      td(tr, q.urgent ? "urgent" : "\u2014"); td(tr, q.wait); td(tr, q.blocked_by || "\u2014");
    });
    set("keys-note", s.active_keys > s.keys.length ?
      "(first " + s.keys.length + " of " + s.active_keys + " active, most queued first)" : "");
    fill("keys-body", s.keys, 7, "no active keys", function (tr, k) {
      key(tr, k.key); td(tr, secs(k.virtual_seconds)); td(tr, k.weight); td(tr, k.running);
      td(tr, Math.round(100 * k.share) + "%"); td(tr, k.queued); td(tr, k.min_seats);
    });
    fill("costs-body", s.types, 4, "no job types registered", function (tr, t) {
      td(tr, t.type); td(tr, t.mean_cost); td(tr, t.learned_costs); td(tr, t.default_cost);
    });
    fill("counters-body", Object.keys(s.counters), 2, "", function (tr, n) {
      var h = document.createElement("th");
      h.textContent = n;
      tr.appendChild(h);
      td(tr, s.counters[n]);
    });
    var st = el("status");
    st.dataset.state = "live";
    st.textContent = "Live: snapshot of " + new Date(s.time).toLocaleString() + ", refreshed every second.";
  }
  function fail(err) {
    var st = el("status");
    st.dataset.state = "error";
    st.textContent = "Not updating since " + new Date().toLocaleTimeString() + ": " + err + ". The figures below are stale; retrying every second.";
  }
  function refresh() {
    fetch("?format=json", { cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(render)
      .catch(fail)
      .then(function () { setTimeout(refresh, 1000); });
  }
  refresh();
})();
`
