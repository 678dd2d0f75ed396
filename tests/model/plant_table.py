#!/usr/bin/env python3
"""Where each planted bug of the Relacy models is caught: the model, the scenario, the search and the execution.

Runs the `model` suite's planted-bug tests of a configured and built meson directory (their commands come from
`meson introspect --tests`), each as registered, and reads the line each search prints (tests/model/
relacy_check.hpp, and the models with their own loops: deque, bounded queue, queue, node pool). Prints one row
per failing search, then, per random search, the latest execution at which it caught a plant: its iteration count
must be at least 5x that (docs/perf-log.md, "the models' random searches").

Relacy's random scheduler seeds each execution with its number, so a run is deterministic: --repeat N runs every
plant N times and reports any execution that differs (it would mean the model is not deterministic).

    python3 tests/model/plant_table.py BUILDDIR [--repeat N] [--filter SUBSTRING] [--all]

--all runs the models' passing runs too and prints every search's executions and CPU seconds.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

# A search's line: an optional "[model]" tag, the scenario (and variant), the search, the result, the executions
# and the CPU seconds.
LINE = re.compile(r'^(?:\[\w+\] )?(?P<scenario>.*?)\s+(?P<search>random|bound2|context bound \d)\s+'
                  r'(?P<result>ok|passed|FAILED):?\s+(?P<executions>\d+) executions, (?P<cpu>[\d.]+) s')


def searches(output):
    for line in output.splitlines():
        m = LINE.match(line)
        if m:
            search = 'random' if m['search'] == 'random' else 'bounded'
            yield (' '.join(m['scenario'].split()), search, m['result'] == 'FAILED', int(m['executions']),
                   float(m['cpu']))


def run(test):
    env = dict(test.get('env') or {})
    start = time.monotonic()
    proc = subprocess.run(test['cmd'], cwd=test.get('workdir') or None, env={**os.environ, **env},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    return proc.returncode, proc.stdout, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('builddir')
    parser.add_argument('--repeat', type=int, default=1)
    parser.add_argument('--filter', default='')
    parser.add_argument('--all', action='store_true', help='the passing runs too')
    args = parser.parse_args()

    tests = json.loads(subprocess.run(['meson', 'introspect', '--tests', args.builddir], stdout=subprocess.PIPE,
                                      text=True, check=True).stdout)
    for t in tests:  # meson 1.0's introspection has no should_fail: a planted run is one given --plant=
        t['planted'] = any(a.startswith('--plant=') for a in t['cmd'])
    tests = [t for t in tests if any(s.split(':')[-1] == 'model' for s in t['suite']) and args.filter in t['name']
             and (args.all or t['planted'])]
    if not tests:
        sys.exit('no model tests match (is the build configured with -Dmodel_tests=enabled?)')

    latest = {}  # (model, scenario) -> (execution, plant) of the latest catch by its random search
    problems = 0
    print(f'{"test":58} {"exit":>4} {"cpu s":>6}  {"search":7} {"execution":>9}  scenario')
    for test in tests:
        seen = None
        for _ in range(args.repeat):
            code, output, _wall = run(test)
            rows = list(searches(output))
            if seen is not None and [r[:4] for r in rows] != [r[:4] for r in seen]:
                print(f'{test["name"]}: runs differ (not deterministic)')
                problems += 1
            seen = rows
        expected = 1 if test['planted'] else 0
        if code != expected:
            problems += 1
        model = test['cmd'][0].rsplit('/', 1)[-1]
        cpu = sum(r[4] for r in seen)
        shown = seen if args.all else [r for r in seen if r[2]]
        if not shown:
            print(f'{test["name"]:58} {code:>4} {cpu:>6.1f}  (no search failed)')
        for scenario, search, failed, executions, seconds in shown:
            mark = 'FAILED' if failed else 'ok'
            print(f'{test["name"]:58} {code:>4} {cpu:>6.1f}  {search:7} {executions:>9}  {scenario} ({mark}, '
                  f'{seconds:.1f} s)')
            if failed and search == 'random' and test['planted']:
                key = (model, scenario)
                if executions > latest.get(key, (-1, ''))[0]:
                    latest[key] = (executions, test['name'])
    print()
    print('random searches that caught a plant: the latest catch, and 5x it')
    for (model, scenario), (executions, name) in sorted(latest.items()):
        print(f'  {model:22} {scenario:44} {executions:>9} {5 * executions:>10}  ({name})')
    if problems:
        print(f'{problems} test(s) exited otherwise than registered, or ran differently')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
