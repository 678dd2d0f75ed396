#!/usr/bin/env python3
"""Runs the trace example and loads the file it writes with Python's own JSON parser: the file must be one JSON
object in the Chrome Trace Event format (what Perfetto and chrome://tracing read), every thread named, and each
stage call and node of the example present once per item.

Usage: check_trace.py EXAMPLE_EXE
In a cross build the example runs under the cross file's exe_wrapper, which meson passes as MESON_EXE_WRAPPER.
"""
import collections
import json
import os
import shlex
import subprocess
import sys
import tempfile


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'trace.json')
        wrapper = shlex.split(os.environ.get('MESON_EXE_WRAPPER', ''))
        subprocess.run(wrapper + [exe, path], check=True)
        with open(path, encoding='utf-8') as f:
            doc = json.load(f)
    events = doc['traceEvents']
    names = {e['tid']: e['args']['name'] for e in events if e['ph'] == 'M' and e['name'] == 'thread_name'}
    counts = collections.Counter()
    for e in events:
        if e['ph'] == 'M':
            continue
        assert e['ph'] in ('X', 'i'), e
        assert e['pid'] == 1 and e['tid'] in names, e
        assert isinstance(e['ts'], (int, float)) and e['ts'] >= 0, e
        if e['ph'] == 'X':
            assert isinstance(e['dur'], (int, float)) and e['dur'] >= 0, e
        counts[(e['cat'], e['name'])] += 1
    expected = {('stage', 'read'): 100, ('stage', 'parse'): 100, ('stage', 'store'): 100,
                ('node', 'sum'): 1, ('node', 'print'): 1}
    for key, n in expected.items():
        assert counts[key] == n, '%s: %d events, expected %d' % (key, counts[key], n)
    assert counts[('pool', 'task')] >= 1
    assert doc['otherData']['dropped'] == 0
    print('ok: %d events on %d threads' % (sum(counts.values()), len(names)))


if __name__ == '__main__':
    main()
