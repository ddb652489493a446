package unbounded

import (
	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/loops"
)

// reportUnbounded reports l when nothing but the call's success ends it.
func reportUnbounded(p *check.Pass, l *loops.Loop) {
	if l.Bounded {
		return
	}
	msg := "retry loop has no attempt limit and no deadline: while the dependency is down it retries forever, and so does every other client; use retry.Do (Config.MaxAttempts, 3 by default) with a context deadline"
	if l.Endless {
		msg = "reconnect loop has nothing that stops it: no context, stop channel or flag is checked, so it retries for as long as the process lives, even after its owner has given up; end it when ctx.Done() is closed (or a stop channel), and wait with retry.Do or a jittered backoff between attempts"
	}
	if len(l.Waits) == 0 {
		msg = "retry loop has no attempt limit, no deadline and no wait of its own: while the dependency is down it retries forever, back to back unless the call itself waits; use retry.Do (Config.MaxAttempts, 3 by default, with jittered backoff) with a context deadline"
	}
	p.Report(l.At, msg)
}
