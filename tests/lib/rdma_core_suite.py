#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Run rdma-core's own test suite (tests/run_tests.py) and grade it.

  rdma_core_suite.py run --src SRC --dev DEV [--gid N] --results FILE
                         [--log FILE] [--timeout S] [--deadline S]
                         [--only PATTERN]... [--progress]
      Run the suite of the rdma-core source tree SRC (SRC/tests) on DEV,
      one test at a time, and write one line per test to FILE:
          TEST-ID <TAB> OUTCOME <TAB> SECONDS <TAB> MESSAGE
      OUTCOME: pass, skip, fail, error, xfail / xpass (the suite's own
      expectedFailure), timeout (no result after --timeout s: the test
      was killed), crash (the test process died), notrun (--deadline
      reached). MESSAGE: the skip reason, or the exception's last line.
      Tracebacks and the tests' own output go to --log.  pyverbs must be
      on PYTHONPATH (the one built from SRC).  A test that hangs or kills
      its process does not stop the run: the runner restarts the suite
      after it.  --only runs the tests whose id contains PATTERN.
      The suite draws random attributes (QP caps, create masks, PSNs):
      Python's RNG is seeded with "SEED TEST-ID" before each test (--seed,
      default 0; "none": not seeded), so a run is reproducible.

  rdma_core_suite.py compare EXPECTED RESULTS
      Grade RESULTS against the expected-results file; prints
      "UNEXPECTED <id>: ..." and "NOTE <id>: ..." lines, "KNOWN <id>: ..."
      for an expected (known) failure, and a last line
      "unexpected=N notes=N".  Exit status 1 if anything is unexpected.

  rdma_core_suite.py counts RESULTS
      "N passed, N skipped, N failed, N errors" (errors include timeouts
      and crashes, which are spelt out when there are any).

  rdma_core_suite.py regen RESULTS [--expected OLD]
      Print a new expected-results file from RESULTS, keeping the notes
      ("## ...") of OLD for tests whose outcome did not change.

  rdma_core_suite.py diff RESULTS-A RESULTS-B
      Tests whose outcome differs between two runs (e.g. metaroce, rxe).

  rdma_core_suite.py gap RESULTS-A RESULTS-B
      Tests that pass in B and not in A, counted by A's outcome and message.

Expected-results file: one line per test,
    TEST-ID OUTCOME [MESSAGE] [## NOTE]
OUTCOME may list alternatives, "pass|skip", for a test whose outcome
legitimately varies (regen keeps them while the outcome is one of them).
MESSAGE is what the suite said (skip reason, exception); NOTE is a
hand-written explanation (kept by regen while the outcome stays).  Lines
starting with '#' are comments.
"""

import argparse
import os
import re
import select
import signal
import subprocess
import sys
import time

BAD = ('fail', 'error', 'timeout', 'crash', 'xpass', 'notrun')
GOOD = ('pass', 'xfail')


def clean(msg):
    """One line, tabs and newlines flattened, bounded."""
    msg = re.sub(r'\s+', ' ', str(msg)).strip()
    return msg[:300]


# --- child: runs tests, reports on a pipe -------------------------------------
def child_main(args):
    import faulthandler
    import traceback
    import unittest

    tests_dir = os.path.join(args.src, 'tests')
    sys.path.insert(0, tests_dir)
    sys.argv = ['run_tests.py', '--dev', args.dev, '--port', '1']
    if args.gid is not None:
        sys.argv += ['--gid', str(args.gid)]
    from importlib.machinery import SourceFileLoader
    from args_parser import parser
    tests = SourceFileLoader('tests', os.path.join(tests_dir, '__init__.py')).load_module()
    parser.parse_args()

    # Every RDMATestCase.setUp execs `rdma link show -j` and `ip -j addr`
    # (0.1-0.5 s each under TCG); their answers do not change during a run.
    import tests.base as tb
    for name in ('get_net_name', 'get_ip_mac_address'):
        orig = getattr(tb.RDMATestCase, name)
        cache = {}

        def cached(*a, _orig=orig, _cache=cache):
            if a not in _cache:
                try:
                    _cache[a] = (True, _orig(*a))
                except Exception as ex:  # noqa: BLE001 (replayed below)
                    _cache[a] = (False, ex)
            ok, val = _cache[a]
            if not ok:
                raise val
            return val
        setattr(tb.RDMATestCase, name, staticmethod(cached))

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t

    done = set(args.skip_ids.split('\n')) if args.skip_ids else set()
    suite = unittest.TestLoader().loadTestsFromModule(tests)
    todo = [t for t in flatten(suite) if t.id() not in done and
            (not args.only or any(p in t.id() for p in args.only))]

    rep = os.fdopen(args.report_fd, 'w', buffering=1)
    log = sys.stderr

    class Result(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.outcome = None
            self.msg = ''

        def _set(self, outcome, msg, err=None):
            rank = ('pass', 'xfail', 'skip', 'xpass', 'fail', 'error')
            if self.outcome is None or rank.index(outcome) > rank.index(self.outcome):
                self.outcome, self.msg = outcome, msg
            if err is not None:
                log.write(''.join(traceback.format_exception(*err)))

        @staticmethod
        def _last(err):
            return clean(''.join(traceback.format_exception_only(err[0], err[1])).strip().split('\n')[-1])

        def addSuccess(self, test):
            self._set('pass', '')

        def addSkip(self, test, reason):
            self._set('skip', clean(reason))

        def addFailure(self, test, err):
            self._set('fail', self._last(err), err)

        def addError(self, test, err):
            self._set('error', self._last(err), err)

        def addExpectedFailure(self, test, err):
            self._set('xfail', self._last(err), err)

        def addUnexpectedSuccess(self, test):
            self._set('xpass', 'unexpected success')

        def addSubTest(self, test, subtest, err):
            if err is None:
                return
            if issubclass(err[0], test.failureException):
                self._set('fail', f'{subtest._subDescription()}: {self._last(err)}', err)
            else:
                self._set('error', f'{subtest._subDescription()}: {self._last(err)}', err)

    class Timeout(Exception):
        pass

    def on_alarm(signum, frame):
        raise Timeout(f'no result after {args.timeout} s')

    signal.signal(signal.SIGALRM, on_alarm)
    import random
    for t in todo:
        tid = t.id()
        if args.seed != 'none':
            random.seed(f'{args.seed} {tid}')
        rep.write(f'START\t{tid}\n')
        log.write(f'=== {tid}\n')
        log.flush()
        # soft limit: an exception in the test (its tearDown still runs);
        # hard limit: traceback of every thread, then the process exits
        # and the parent records a timeout and carries on after this test
        signal.alarm(args.timeout)
        faulthandler.dump_traceback_later(args.timeout + 30, exit=True, file=log)
        start = time.monotonic()
        res = Result()
        try:
            t(res)
        except Timeout as ex:
            res._set('error', clean(ex))
        finally:
            signal.alarm(0)
            faulthandler.cancel_dump_traceback_later()
        secs = time.monotonic() - start
        outcome, msg = res.outcome or 'error', res.msg
        if outcome == 'error' and 'Timeout: no result after' in msg:
            outcome, msg = 'timeout', f'no result after {args.timeout} s (interrupted)'
        if not res.outcome:
            msg = 'no result reported'
        log.write(f'--- {tid}: {outcome} {secs:.1f}s {msg}\n')
        log.flush()
        rep.write(f'RESULT\t{tid}\t{outcome}\t{secs:.1f}\t{msg}\n')
    rep.write('END\n')
    return 0


# --- parent: supervises children, writes the results file ----------------------
def run_main(args):
    results = {}
    order = []
    deadline = time.monotonic() + args.deadline if args.deadline else None
    logf = open(args.log or os.devnull, 'a')
    out = open(args.results, 'w')

    def record(tid, outcome, secs, msg):
        if tid not in results:
            order.append(tid)
        results[tid] = (outcome, secs, msg)
        out.write(f'{tid}\t{outcome}\t{secs}\t{msg}\n')
        out.flush()
        if args.progress:
            print(f'# {outcome:7} {secs:>6}s {tid} {msg[:100]}', flush=True)

    while True:
        r, w = os.pipe()
        cmd = [sys.executable, os.path.abspath(__file__), '_child', '--src', args.src,
               '--dev', args.dev, '--timeout', str(args.timeout), '--report-fd', str(w),
               '--seed', args.seed,
               '--skip-ids', '\n'.join(order)]
        if args.gid is not None:
            cmd += ['--gid', str(args.gid)]
        for p in args.only or []:
            cmd += ['--only', p]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                pass_fds=(w,), start_new_session=True)
        os.close(w)
        rf = os.fdopen(r, 'r')
        cur, cur_start, ended, buf = None, None, False, ''
        while True:
            # a backstop in case faulthandler cannot end the child
            limit = args.timeout + 60
            if deadline is not None:
                limit = min(limit, max(deadline - time.monotonic(), 0))
            ready, _, _ = select.select([rf], [], [], limit)
            if not ready:
                break
            chunk = os.read(r, 65536).decode(errors='replace')
            if not chunk:
                break
            buf += chunk
            while '\n' in buf:
                line, buf = buf.split('\n', 1)
                f = line.split('\t')
                if f[0] == 'START':
                    cur, cur_start = f[1], time.monotonic()
                elif f[0] == 'RESULT':
                    record(f[1], f[2], f[3], f[4] if len(f) > 4 else '')
                    cur = None
                elif f[0] == 'END':
                    ended = True
            if deadline is not None and time.monotonic() >= deadline:
                break
        # end the child's whole session (its forked helpers too)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        rc = proc.wait()
        rf.close()
        if ended:
            break
        if cur is not None:
            secs = time.monotonic() - cur_start
            if secs >= args.timeout:
                record(cur, 'timeout', f'{secs:.1f}', f'no result after {secs:.0f} s (killed)')
            elif deadline is not None and time.monotonic() >= deadline:
                record(cur, 'notrun', f'{secs:.1f}', 'deadline of the whole run reached')
            else:
                why = f'signal {-rc}' if rc < 0 else f'exit status {rc}'
                record(cur, 'crash', f'{secs:.1f}', f'test process died ({why})')
        elif deadline is None or time.monotonic() < deadline:
            # died outside a test (import error...): nothing to resume
            logf.write(f'runner: child exited {rc} outside a test\n')
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
    if deadline is not None and time.monotonic() >= deadline:
        # what did not run: ask a child for the list, cheaply
        for tid in list_tests(args):
            if tid not in results:
                record(tid, 'notrun', '0', 'deadline of the whole run reached')
    out.close()
    return 0


def list_tests(args):
    cmd = [sys.executable, os.path.join(args.src, 'tests', 'run_tests.py'), '--list-tests']
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return []
    return [l.strip() for l in p.stdout.splitlines()
            if l.startswith('tests.') and (not args.only or any(x in l for x in args.only))]


# --- results / expected files ----------------------------------------------------
def read_results(path):
    res = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            fld = line.split('\t')
            res[fld[0]] = (fld[1], fld[3] if len(fld) > 3 else '')
    return res


def read_expected(path):
    exp = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            note = ''
            if '##' in line:
                line, note = line.split('##', 1)
                note = note.strip()
            fld = line.split(None, 2)
            if len(fld) < 2:
                sys.exit(f'{path}:{n}: expected "TEST-ID OUTCOME [MESSAGE] [## NOTE]"')
            exp[fld[0]] = (fld[1], fld[2].strip() if len(fld) > 2 else '', note)
    return exp


def counts(res):
    c = {}
    for outcome, _ in res.values():
        c[outcome] = c.get(outcome, 0) + 1
    err = c.get('error', 0) + c.get('timeout', 0) + c.get('crash', 0)
    s = (f"{c.get('pass', 0) + c.get('xfail', 0)} passed, {c.get('skip', 0)} skipped, "
         f"{c.get('fail', 0) + c.get('xpass', 0)} failed, {err} errors")
    extra = [f'{c[k]} {k}' for k in ('timeout', 'crash', 'notrun') if c.get(k)]
    if extra:
        s += ' (' + ', '.join(extra) + ')'
    return s


def compare_main(args):
    exp = read_expected(args.expected)
    res = read_results(args.results)
    unexpected = notes = 0

    def say(kind, tid, text):
        nonlocal unexpected, notes
        if kind == 'UNEXPECTED':
            unexpected += 1
        else:
            notes += 1
        print(f'{kind} {tid}: {text}')

    for tid, (got, msg) in res.items():
        if tid not in exp:
            if got in BAD:
                say('UNEXPECTED', tid, f'{got} ({msg}); not in the expected file')
            else:
                say('NOTE', tid, f'{got}; not in the expected file')
            continue
        want, wmsg, note = exp[tid]
        wants = want.split('|')
        about = f'{got} ({msg})' if msg else got
        if got in wants:
            if got in BAD:
                print(f'KNOWN {tid}: {about} ## {note or "no NOTE"}')
            if wants == ['skip'] and msg != wmsg:
                say('NOTE', tid, f'skips for another reason: "{msg}" (expected "{wmsg}")')
            continue
        if got in GOOD:
            if not any(w in GOOD for w in wants):
                say('NOTE', tid, f'now {about}, expected {want}: update the expected file')
        elif got == 'skip':
            if all(w in BAD for w in wants):
                say('NOTE', tid, f'now skips ({msg}), expected {want}: update the expected file')
            else:
                say('UNEXPECTED', tid, f'{about}, expected {want}')
        else:
            if any(w in BAD for w in wants):
                say('NOTE', tid, f'now {about}, expected {want} ({note or wmsg})')
            else:
                say('UNEXPECTED', tid, f'{about}, expected {want}')
    for tid, (want, _, note) in exp.items():
        if tid not in res:
            say('UNEXPECTED', tid, 'did not run (missing from the results)')
        elif want != 'pass' and not note:
            say('NOTE', tid, f'expected {want} without a "## NOTE" explaining why')
    print(f'unexpected={unexpected} notes={notes}')
    return 1 if unexpected else 0


def regen_main(args):
    res = read_results(args.results)
    old = read_expected(args.expected) if args.expected and os.path.exists(args.expected) else {}
    header = []
    if args.expected and os.path.exists(args.expected):
        with open(args.expected) as f:
            for line in f:
                if not line.startswith('#'):
                    break
                header.append(line.rstrip('\n'))
    for h in header:
        print(h)
    # the note of another test with the same outcome and message explains a
    # test that has none (e.g. a new skip for a known reason)
    by_msg = {}
    for o, m, n in old.values():
        if n:
            by_msg.setdefault((o, m), n)
    width = max((len(t) for t in res), default=0)
    for tid in sorted(res):
        outcome, msg = res[tid]
        note = ''
        if tid in old and outcome in old[tid][0].split('|'):
            outcome, note = old[tid][0], old[tid][2]
        if not note:
            note = by_msg.get((outcome, msg.replace('##', '#')), '')
        if not note and outcome in BAD:
            note = 'BUG: not analysed yet'
        msg = msg.replace('##', '#')
        line = f'{tid:{width}} {outcome:7} {msg}'.rstrip()
        if note:
            line += f' ## {note}'
        print(line)
    return 0


def diff_main(args):
    a, b = read_results(args.a), read_results(args.b)
    for tid in sorted(set(a) | set(b)):
        oa, ob = a.get(tid, ('-', ''))[0], b.get(tid, ('-', ''))[0]
        if oa != ob:
            print(f'{tid} {oa} {ob}')
    return 0


def gap_main(args):
    """Tests B passes and A does not, grouped by A's outcome and message."""
    a, b = read_results(args.a), read_results(args.b)
    groups = {}
    for tid, (ob, _) in b.items():
        oa, ma = a.get(tid, ('missing', ''))
        if ob in GOOD and oa not in GOOD:
            groups.setdefault((oa, ma), []).append(tid)
    for (oa, ma), tids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f'{len(tids):3} {oa}: {ma}')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    for name in ('run', '_child'):
        p = sub.add_parser(name)
        p.add_argument('--src', required=True)
        p.add_argument('--dev', required=True)
        p.add_argument('--gid', type=int)
        p.add_argument('--timeout', type=int, default=120)
        p.add_argument('--only', action='append')
        p.add_argument('--seed', default='0')
        if name == 'run':
            p.add_argument('--results', required=True)
            p.add_argument('--log')
            p.add_argument('--deadline', type=int)
            p.add_argument('--progress', action='store_true')
        else:
            p.add_argument('--report-fd', type=int, required=True)
            p.add_argument('--skip-ids', default='')
    p = sub.add_parser('compare')
    p.add_argument('expected')
    p.add_argument('results')
    p = sub.add_parser('counts')
    p.add_argument('results')
    p = sub.add_parser('regen')
    p.add_argument('results')
    p.add_argument('--expected')
    for name in ('diff', 'gap'):
        p = sub.add_parser(name)
        p.add_argument('a')
        p.add_argument('b')
    args = ap.parse_args()
    if args.cmd == 'run':
        return run_main(args)
    if args.cmd == '_child':
        return child_main(args)
    if args.cmd == 'compare':
        return compare_main(args)
    if args.cmd == 'counts':
        print(counts(read_results(args.results)))
        return 0
    if args.cmd == 'regen':
        return regen_main(args)
    if args.cmd == 'diff':
        return diff_main(args)
    if args.cmd == 'gap':
        return gap_main(args)
    return 2


if __name__ == '__main__':
    sys.exit(main())
