package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/internal/await"
)

// startServe runs `unherd serve --addr 127.0.0.1:0` until the test ends
// and returns the URL it prints first.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- runContext(ctx, newEnv(pw, io.Discard), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		pw.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(pr)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case c := <-code:
			if c != exitInterrupted {
				t.Errorf("serve exited with %d after its context was cancelled; want %d", c, exitInterrupted)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not return within 10s of its context being cancelled")
		}
	})
	select {
	case u, ok := <-lines:
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("serve's first line is %q; want the page's URL", u)
		}
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("serve printed no URL within 10s")
	}
	return ""
}

// chromiumPath finds Debian's chromium. Without it the browser tests skip,
// unless UNHERD_REQUIRE_SERVICES is set (as .ci/run sets it), when they
// fail.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install -y chromium): the browser tests of unherd serve cannot run"
	if os.Getenv("UNHERD_REQUIRE_SERVICES") != "" {
		t.Fatal(msg + " and UNHERD_REQUIRE_SERVICES is set")
	}
	t.Skip(msg + "; skipped (set UNHERD_REQUIRE_SERVICES=1 to fail instead)")
	return ""
}

// page is a headless chromium tab for one test, with the console errors
// it has seen.
type page struct {
	ctx     context.Context
	profile string // the browser's profile directory, on every one of its command lines
	mu      sync.Mutex
	errs    []string
}

// newPage starts a headless chromium whose every process is gone when the
// test ends (the test fails otherwise), bounded by timeout. The test also
// fails if the page logged a console error.
func newPage(t *testing.T, timeout time.Duration) *page {
	t.Helper()
	path := chromiumPath(t)
	profile := t.TempDir()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox, // the tests may run as root, where chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	base, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	p := &page{ctx: ctx, profile: profile}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				msg = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "uncaught: " + ev.ExceptionDetails.Text
			if x := ev.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			p.mu.Lock()
			p.errs = append(p.errs, msg)
			p.mu.Unlock()
		}
	})
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
			return err
		}))
	}
	if err != nil {
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
		t.Fatalf("starting %s: %v", path, err)
	}
	t.Cleanup(func() {
		if errs := p.consoleErrors(); len(errs) > 0 {
			t.Errorf("console errors: %q", errs)
		}
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
		// Every chromium process carries the profile directory on its
		// command line: none may outlive the test.
		var left []string
		if !await.Until(10*time.Second, 100*time.Millisecond, func() bool {
			left = processesWith("--user-data-dir=" + profile)
			return len(left) == 0
		}) {
			t.Errorf("chromium processes %v still running 10s after the test closed the browser", left)
		}
	})
	return p
}

// servePage starts the server and a page for a test that drives the
// browser; in -short it skips the test, saying what the test runs.
func servePage(t *testing.T, runs string, timeout time.Duration) (string, *page) {
	t.Helper()
	if testing.Short() {
		t.Skip(runs + ": not in -short")
	}
	return startServe(t), newPage(t, timeout)
}

// processesWith lists the pids whose command line holds arg. Chromium's
// child processes rewrite their command line as one string of words
// separated by spaces, so spaces separate arguments as NULs do.
func processesWith(arg string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		words := strings.FieldsFunc(string(b), func(r rune) bool { return r == 0 || r == ' ' })
		if slices.Contains(words, arg) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// cpuSeconds is the processor time the browser's processes have used so
// far (user and system, in seconds): unlike the wall clock, it does not
// grow with the load of other processes on the machine.
func (p *page) cpuSeconds() float64 {
	var ticks float64
	for _, pid := range processesWith("--user-data-dir=" + p.profile) {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state is
		// the first, utime the 12th and stime the 13th.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 12 {
			var u, s float64
			fmt.Sscan(f[11], &u)
			fmt.Sscan(f[12], &s)
			ticks += u + s
		}
	}
	return ticks / 100 // USER_HZ is 100 on Linux
}

// settle waits until the browser is idle: until its processes use under
// 2% of a core over a quarter of a second, or 15 s have passed. A
// browser that has just started still builds its own interface (its
// omnibox popup is a web page of its own) for about a second, on the same
// two cores as the page: a user opens the page in a browser that has done
// so. After a run, the browser writes the simulator's optimised code to
// its cache.
func (p *page) settle(t *testing.T) {
	t.Helper()
	last, measured := p.cpuSeconds(), false
	idle := await.Until(15*time.Second, 250*time.Millisecond, func() bool {
		now := p.cpuSeconds()
		idle := measured && now-last < 0.005 // the first call starts the first quarter of a second
		last, measured = now, true
		return idle
	})
	if !idle {
		t.Logf("the browser was still busy after 15 s; timing the page anyway")
	}
}

// consoleErrors returns the errors seen so far.
func (p *page) consoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errs)
}

// run runs the steps, failing the test with what if one fails.
func (p *page) run(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		t.Fatalf("%s: %v (console errors: %q)", what, err, p.consoleErrors())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, p *page, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v (console errors: %q)", expr, err, p.consoleErrors())
	}
	return v
}

// poll waits until the expression is true in the page, for up to limit.
func poll(expr string, limit time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit))
}

// waitRun waits until the what-if numbered after seq has finished, and
// returns its number and the #result text.
func (p *page) waitRun(t *testing.T, after int) (int, string) {
	t.Helper()
	p.run(t, fmt.Sprintf("waiting for what-if run %d to finish", after+1),
		poll(fmt.Sprintf(`(() => { const r = document.querySelector('#result');
			return r && Number(r.dataset.seq) > %d && (r.dataset.state === 'done' || r.dataset.state === 'error'); })()`, after), 4*time.Minute))
	state := eval[struct {
		Seq   string `json:"seq"`
		State string `json:"state"`
		Error string `json:"error"`
	}](t, p, `(() => { const r = document.querySelector('#result'); const e = document.querySelector('#policy-error');
			return {seq: r.dataset.seq, state: r.dataset.state, error: e.hidden ? '' : e.textContent}; })()`)
	if state.State != "done" {
		t.Fatalf("what-if run %s ended in state %q: %s", state.Seq, state.State, state.Error)
	}
	var n int
	fmt.Sscan(state.Seq, &n)
	return n, eval[string](t, p, `document.querySelector('#result').textContent`)
}

// timeline reports the page's marks (performance.mark, named unherd:...)
// in milliseconds from the page's navigation, in the order they were made:
// when the module was compiled, each worker's simulator started, the
// what-if was asked for, its parts made and merged, and its charts drawn.
func (p *page) timeline(t *testing.T) string {
	t.Helper()
	return eval[string](t, p, `performance.getEntriesByType('mark').filter(m => m.name.startsWith('unherd:'))
		.map(m => m.name.slice(7) + ' ' + Math.round(m.startTime)).join(', ')`)
}

// cliWhatIf is what `unherd whatif --json --seed SEED --policy FILE` prints
// for the policy file named file holding doc.
func cliWhatIf(t *testing.T, file, doc, seed string) string {
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Error(err)
		return ""
	}
	var out, errb bytes.Buffer
	if code := run([]string{"whatif", "--json", "--quiet", "--seed", seed, "--policy", path}, &out, &errb); code != exitOK {
		t.Errorf("unherd whatif on %s exited %d: %s", file, code, errb.String())
	}
	return out.String()
}

// sameJSON fails the test unless a and b hold equal JSON values.
func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: the page's #result is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: the command's output is not JSON: %v\n%s", what, err, want)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s: the page's #result differs from unherd whatif --json (-cli +page):\n%s", what, d)
	}
}

// TestServePageMatchesCLI opens links naming several policies and checks
// that each opens the run it names (the form shows the policy, #result
// holds what the command line prints for it), with no console error.
func TestServePageMatchesCLI(t *testing.T) {
	base, p := servePage(t, "runs the what-if in a browser and on the command line", 6*time.Minute)
	cases := []struct {
		query, file, doc string
	}{
		// The five-attempt example of docs/experiments.md and the README.
		{"name=five&attempts=5&jitter=none&budget=none&seed=1", "five.yaml", "attempts: 5\njitter: none\nbudget: none\n"},
		{"attempts=4&base=100ms&cap=2s&jitter=decorrelated&budget=ratio&budget.ratio=0.2&seed=7", "policy.yaml",
			"attempts: 4\nbase: 100ms\ncap: 2s\njitter: decorrelated\nbudget:\n  kind: ratio\n  ratio: 0.2\n"},
		{"attempts=2&cap=500ms&budget=token&seed=3", "policy.yaml", "attempts: 2\ncap: 500ms\nbudget: token\n"},
	}
	// The command line computes its answers while the browser computes
	// the page's.
	want := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		q, _ := url.ParseQuery(c.query)
		wg.Go(func() { want[i] = cliWhatIf(t, c.file, c.doc, q.Get("seed")) })
	}
	results := map[string]string{}
	for _, c := range cases {
		p.run(t, "opening "+c.query, chromedp.Navigate(base+"?"+c.query))
		_, got := p.waitRun(t, 0) // a new page numbers its runs from 1
		q, _ := url.ParseQuery(c.query)
		for k := range q {
			if v := eval[string](t, p, fmt.Sprintf(`document.querySelector('#policy [name=%q]').value`, k)); v != q.Get(k) {
				t.Errorf("%s: the form's %s is %q; want %q", c.query, k, v, q.Get(k))
			}
		}
		if n := eval[int](t, p, `document.querySelectorAll('#margins li').length`); n != 2 {
			t.Errorf("%s: the page lists %d margins against a metastable failure; want 2 (yours, the default)", c.query, n)
		}
		ms := eval[string](t, p, `document.querySelector('#result').dataset.ms`)
		loc := eval[string](t, p, `location.search`)
		t.Logf("%s: the what-if took %s ms in chromium (from the request to the charts drawn)", c.query, ms)
		if loc != "?"+c.query {
			t.Errorf("the page rewrote its URL to %q; want ?%s kept", loc, c.query)
		}
		results[c.query] = got
	}
	wg.Wait()
	for i, c := range cases {
		sameJSON(t, c.query, results[c.query], want[i])
	}
}

// TestServePageRefusesAsCLI opens links holding values the command line
// refuses in a policy file and checks that the page refuses each too,
// with the command line's message less its file and line, beside the
// form field at fault, marked invalid: a jitter the list does not offer
// is not dropped for the default.
func TestServePageRefusesAsCLI(t *testing.T) {
	base, p := servePage(t, "opens the page in a browser", 3*time.Minute)
	cases := []struct {
		query, id, doc string
	}{
		{"jitter=bogus", "f-jitter", "jitter: bogus\n"},
		{"attempts=-1", "f-attempts", "attempts: -1\n"},
		{"budget=token&budget.ratio=0.2", "f-ratio", "budget:\n  kind: token\n  ratio: 0.2\n"},
		{"timeouts.attempt=500ms", "f-timeout", "timeouts:\n  attempt: 500ms\n"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(path, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := run([]string{"whatif", "--quiet", "--policy", path}, &out, &errb); code != exitFailure {
			t.Fatalf("%s: unherd whatif exited %d; want %d", c.doc, code, exitFailure)
		}
		_, want, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(errb.String(), "unherd: ")), path+":")
		_, want, _ = strings.Cut(want, ": ") // the line
		p.run(t, "opening "+c.query, chromedp.Navigate(base+"?"+c.query),
			poll(`document.querySelector('#result').dataset.state === 'error'`, 2*time.Minute))
		got := eval[struct {
			Msg, Invalid, Value string
		}](t, p, fmt.Sprintf(`(() => { const f = document.getElementById(%q);
			return {Msg: document.querySelector('#policy-error').textContent, Invalid: f.getAttribute('aria-invalid') || '', Value: f.value}; })()`, c.id))
		if got.Msg != want || got.Invalid != "true" {
			t.Errorf("%s: the page says %q, #%s aria-invalid=%q; want the command line's %q beside the field", c.query, got.Msg, c.id, got.Invalid, want)
		}
		if strings.Contains(got.Msg, "policy.json") {
			t.Errorf("%s: the page's message %q names a file the user never wrote", c.query, got.Msg)
		}
		if c.id == "f-jitter" && got.Value != "bogus" {
			t.Errorf("jitter=bogus: the form's jitter is %q; want bogus kept", got.Value)
		}
	}
}

// canvases returns the what-if's charts as images.
func (p *page) canvases(t *testing.T) []string {
	return eval[[]string](t, p, `[...document.querySelectorAll('#whatif-charts canvas')].map(c => c.toDataURL())`)
}

// TestServePageEditReruns edits the policy from the keyboard and checks
// that the page runs it again: the URL, the result and the charts change;
// and that every input is labelled and reached by Tab.
func TestServePageEditReruns(t *testing.T) {
	base, p := servePage(t, "runs the what-if in a browser", 5*time.Minute)
	p.run(t, "opening a blank page", chromedp.Navigate("about:blank"))
	p.settle(t)
	cpu := p.cpuSeconds()
	p.run(t, "opening the page", chromedp.Navigate(base+"?attempts=5&jitter=none&budget=none&seed=1"))
	seq, first := p.waitRun(t, 0)
	t.Logf("the five-attempt what-if took %s ms in chromium from the request to the charts drawn, %s ms of it in the simulator (the workers %s ms at once, the merge %s ms); chromium used %.2f s of processor time from the page's load to the charts",
		eval[string](t, p, `document.querySelector('#result').dataset.ms`), eval[string](t, p, `document.querySelector('#result').dataset.runMs`),
		eval[string](t, p, `document.querySelector('#result').dataset.partsMs`), eval[string](t, p, `document.querySelector('#result').dataset.mergeMs`), p.cpuSeconds()-cpu)
	t.Logf("the page's timeline, in ms from its navigation: %s", p.timeline(t))
	before := p.canvases(t)
	if len(before) != 2 {
		t.Fatalf("the what-if drew %d charts; want 2 (closed population, open stream)", len(before))
	}

	if empty := eval[int](t, p, `[...document.querySelectorAll('#whatif-tables td')].filter(td => td.textContent === '').length`); empty > 0 {
		t.Errorf("%d cells of the what-if's tables are empty", empty)
	}
	if unlabelled := eval[[]string](t, p, `[...document.querySelectorAll('input, select')].filter(e => !e.labels.length && !e.getAttribute('aria-label')).map(e => e.id || e.name)`); len(unlabelled) > 0 {
		t.Errorf("inputs without a label: %q", unlabelled)
	}
	reached := map[string]bool{}
	for range 30 {
		p.run(t, "pressing Tab", chromedp.KeyEvent(kb.Tab))
		reached[eval[string](t, p, `document.activeElement.id`)] = true
	}
	for _, id := range []string{"f-name", "f-attempts", "f-base", "f-cap", "f-jitter", "f-budget", "f-ratio", "f-timeout", "f-seed", "f-scenario"} {
		if !reached[id] {
			t.Errorf("Tab never reached #%s (reached %v)", id, reached)
		}
	}

	// The main thread must stay free while the simulator runs: the
	// longest gap between the ticks of a 50 ms timer is recorded.
	p.run(t, "timing the main thread", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](`window.unherdGap = 0; (() => { let last = performance.now();
			setInterval(() => { const now = performance.now(); window.unherdGap = Math.max(window.unherdGap, now - last); last = now; }, 50); })()`)(ctx, tg)
		return err
	}))
	// An edit from the keyboard: select the attempts and type 2; the
	// moment that run starts, the page submits attempts 3, which cancels
	// it and runs 3. (A second edit typed from here would reach the page
	// a round trip and a 400 ms debounce later, by when a run of 2 on
	// warm workers may be over, with nothing left to cancel.)
	typeAttempts := func(v string) {
		p.run(t, "typing attempts "+v,
			chromedp.Focus(chromedp.CSS("#f-attempts")),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[any](`document.querySelector('#f-attempts').select()`)(ctx, tg)
				return err
			}),
			chromedp.SendKeys(chromedp.CSS("#f-attempts"), v))
	}
	p.run(t, "arming the edit to attempts 3", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](fmt.Sprintf(`(() => {
			const res = document.querySelector('#result');
			const o = new MutationObserver(() => {
				if (res.dataset.seq !== '%d' || res.dataset.state !== 'running') return;
				o.disconnect();
				const a = document.querySelector('#f-attempts');
				a.value = '3';
				a.form.requestSubmit();
			});
			o.observe(res, {attributes: true});
		})()`, seq+1))(ctx, tg)
		return err
	}))
	typeAttempts("2")
	seq2, second := p.waitRun(t, seq+1)
	t.Logf("the three-attempt what-if after the edit, on workers already started and with the default policy's parts kept, took %s ms from the request to the charts drawn, %s ms of it in the simulator (the workers %s ms at once, the merge %s ms)",
		eval[string](t, p, `document.querySelector('#result').dataset.ms`), eval[string](t, p, `document.querySelector('#result').dataset.runMs`),
		eval[string](t, p, `document.querySelector('#result').dataset.partsMs`), eval[string](t, p, `document.querySelector('#result').dataset.mergeMs`))
	if c := eval[string](t, p, `document.querySelector('#result').dataset.cancelled`); c != "1" {
		t.Errorf("%s runs cancelled; want 1, the run of attempts 2 cut short by the edit to 3", c)
	}
	if gap := eval[float64](t, p, `window.unherdGap`); gap > 2000 {
		t.Errorf("the main thread's 50 ms timer stalled for %.0f ms while the simulator ran; want it free (a worker runs the simulator)", gap)
	} else {
		t.Logf("the longest stall of the main thread's 50 ms timer while the simulator ran: %.0f ms", gap)
	}
	if loc := eval[string](t, p, `location.search`); !strings.Contains(loc, "attempts=3") {
		t.Errorf("after the edit the URL is %q; want attempts=3 in it", loc)
	}
	var rep struct {
		Policy map[string]any `json:"policy"`
	}
	if err := json.Unmarshal([]byte(second), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Policy["attempts"] != float64(3) {
		t.Errorf("after the edits (run %d) the result's policy is %v; want attempts 3", seq2, rep.Policy)
	}
	if first == second {
		t.Error("the result did not change after the edit")
	}
	after := p.canvases(t)
	if len(after) != len(before) {
		t.Fatalf("after the edit the what-if drew %d charts; want %d", len(after), len(before))
	}
	for i := range after {
		if after[i] == before[i] {
			t.Errorf("chart %d did not change after the edit", i)
		}
	}

	// Another seed: the default policy's parts are not kept for it, so
	// the workers, started and with their code optimised, make all four.
	p.run(t, "typing seed 2", chromedp.Focus(chromedp.CSS("#f-seed")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](`document.querySelector('#f-seed').select()`)(ctx, tg)
			return err
		}),
		chromedp.SendKeys(chromedp.CSS("#f-seed"), "2"))
	p.waitRun(t, seq2)
	t.Logf("the three-attempt what-if with seed 2, all four parts made on workers already started, took %s ms from the request to the charts drawn, %s ms of it in the simulator (the workers %s ms at once, the merge %s ms)",
		eval[string](t, p, `document.querySelector('#result').dataset.ms`), eval[string](t, p, `document.querySelector('#result').dataset.runMs`),
		eval[string](t, p, `document.querySelector('#result').dataset.partsMs`), eval[string](t, p, `document.querySelector('#result').dataset.mergeMs`))
	if loc := eval[string](t, p, `location.search`); !strings.Contains(loc, "seed=2") {
		t.Errorf("after the seed's edit the URL is %q; want seed=2 in it", loc)
	}

	// A revisit: the same link opened again in the same browser, whose
	// caches now hold the page and the simulator's compiled code.
	p.settle(t)
	p.run(t, "opening the page again", chromedp.Navigate(base+"?attempts=5&jitter=none&budget=none&seed=1"))
	if _, again := p.waitRun(t, 0); again != first {
		t.Errorf("the link opened again gave another result:\n%s\nwant the first run's:\n%s", again, first)
	}
	t.Logf("the five-attempt what-if, the page opened again with the browser's caches warm, took %s ms from the request to the charts drawn; the page's timeline, in ms from its navigation: %s",
		eval[string](t, p, `document.querySelector('#result').dataset.ms`), p.timeline(t))

	// A bad value is reported beside its input and runs nothing.
	p.run(t, "typing a bad cap", chromedp.SendKeys(chromedp.CSS("#f-cap"), "2 seconds"),
		poll(`document.querySelector('#result').dataset.state === 'error'`, 30*time.Second))
	msg := eval[string](t, p, `document.querySelector('#policy-error').textContent`)
	invalid := eval[string](t, p, `document.querySelector('#f-cap').getAttribute('aria-invalid') || ''`)
	if !strings.Contains(msg, "cap") || invalid != "true" {
		t.Errorf("a bad cap shows %q with aria-invalid=%q; want a message naming cap and the input marked invalid", msg, invalid)
	}

	if dir := os.Getenv("UNHERD_SCREENSHOTS"); dir != "" {
		screenshots(t, p, base, dir)
	}
}

// scenarioResult is the JSON #scenario-result holds once a scenario ran.
type scenarioResult struct {
	Scenario string           `json:"scenario"`
	Params   map[string]any   `json:"params"`
	Rows     []map[string]any `json:"rows"`
}

// runScenario opens url, waits up to limit for the scenario it names to
// finish, and returns #scenario-result's text and that text decoded.
func (p *page) runScenario(t *testing.T, what, url string, limit time.Duration) (string, scenarioResult, error) {
	t.Helper()
	p.run(t, "opening "+what, chromedp.Navigate(url))
	p.run(t, "waiting for "+what, poll(`document.querySelector('#scenario-result').dataset.state === 'done'`, limit))
	text := eval[string](t, p, `document.querySelector('#scenario-result').textContent`)
	var r scenarioResult
	err := json.Unmarshal([]byte(text), &r)
	return text, r, err
}

// TestServePageScenario runs another scenario from a link and checks that
// its claims table and charts appear.
func TestServePageScenario(t *testing.T) {
	base, p := servePage(t, "runs a scenario in a browser", 4*time.Minute)
	text, r, err := p.runScenario(t, "the storm scenario", base+"?attempts=5&scenario=storm", 3*time.Minute)
	claims := eval[int](t, p, `document.querySelectorAll('#scenario-claims tbody tr').length`)
	charts := eval[int](t, p, `document.querySelectorAll('#scenario-charts canvas').length`)
	if err != nil || r.Scenario != "storm" {
		t.Errorf("#scenario-result holds %.200q (%v); want the storm's result", text, err)
	}
	if claims == 0 || charts == 0 {
		t.Errorf("the storm shows %d claims and %d charts; want both", claims, charts)
	}
}

// TestServePageMetastable runs the metastable scenario from a link, at its
// published size, and checks that its six claims hold (Huang et al.'s four
// outcomes, and the map's two: neither the default nor the default +
// limiter stays down), that the tipping-point map is drawn, and that the
// form offers the map's triggers.
func TestServePageMetastable(t *testing.T) {
	base, p := servePage(t, "runs a scenario in a browser", 6*time.Minute)
	text, r, err := p.runScenario(t, "the metastable scenario", base+"?scenario=metastable", 5*time.Minute)
	if sel := eval[string](t, p, `document.querySelector('#f-scenario').value`); sel != "metastable" {
		t.Errorf("the scenario list offers %q; want metastable selected", sel)
	}
	holds := eval[int](t, p, `document.querySelectorAll('#scenario-claims td.holds').length`)
	maps := eval[int](t, p, `document.querySelectorAll('#scenario-charts figure[data-chart="metastable_tipping"] canvas').length`)
	fields := eval[string](t, p, `[...document.querySelectorAll('#scenario-grid input')].map(e => e.name).join(',')`)
	if err != nil || r.Scenario != "metastable" || len(r.Rows) != 6 {
		t.Errorf("#scenario-result holds %.200q (%v); want the metastable scenario's six rows", text, err)
	}
	if holds != 6 || maps == 0 {
		t.Errorf("metastable shows %d claims that hold and %d tipping-point charts; want 6 (Huang et al.'s four, the map's two) and 1", holds, maps)
	}
	if !strings.Contains(fields, "map-cuts") || !strings.Contains(fields, "map-lengths") {
		t.Errorf("the scenario's form has fields %s; want map-cuts and map-lengths among them", fields)
	}
}

// TestServeExportRunsFromAStaticHost writes the page with --export,
// serves the directory with a plain file server, and runs the storm in it.
func TestServeExportRunsFromAStaticHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario in a browser: not in -short")
	}
	dir := filepath.Join(t.TempDir(), "site")
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--export", dir}, &out, &errb); code != exitOK {
		t.Fatalf("unherd serve --export exited %d: %s", code, errb.String())
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close) // runs after newPage's cleanup, which checks the console
	p := newPage(t, 3*time.Minute)
	_, r, err := p.runScenario(t, "the exported page's storm", srv.URL+"/?scenario=storm&storm.duration=10s", 2*time.Minute)
	if err != nil || r.Scenario != "storm" || r.Params["duration"] != "10s" {
		t.Errorf("the exported page's scenario result is %+v (%v); want the storm with duration 10s, as its link names", r, err)
	}
}

// screenshots writes the page at a phone's width and a desktop's into dir
// (relative to this package), for the docs.
func screenshots(t *testing.T, p *page, base, dir string) {
	for _, w := range []int64{375, 1280} {
		p.run(t, fmt.Sprintf("opening the page at %d px", w),
			chromedp.EmulateViewport(w, 900),
			chromedp.Navigate(base+"?name=five&attempts=5&jitter=none&budget=none&seed=1"),
			poll(`document.querySelector('#result').dataset.state === 'done'`, 4*time.Minute),
			chromedp.Sleep(300*time.Millisecond)) // the charts' resize
		buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot at %d px: %v", w, err)
		}
		name := filepath.Join(dir, fmt.Sprintf("serve-%d.png", w))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", name)
	}
}
