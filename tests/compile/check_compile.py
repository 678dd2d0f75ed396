#!/usr/bin/env python3
"""Compiles one case of a test source (-DWEFT_CASE=<case>, syntax only) and checks the outcome.

Without --expect the case must compile cleanly under -Wall -Wextra -Wpedantic -Werror. With --expect it must
fail, and the compiler's output must contain the expected text (a static_assert's message, say): a refusal
for any other reason (a typo in the test) does not count.

With --examples-of HEADER (repeatable), every Example block in the header's comments must also appear in the
source, line for line (leading spaces aside): so a source that copies the headers' examples compiles exactly
what the headers show, and goes stale loudly when an example changes. A block is "// Example: code" on one
line, or "// Example:" (or "// Example (what):") followed by lines "//   code".

usage: check_compile.py --source FILE --case N [--expect TEXT] [--include DIR]... [--examples-of HEADER]...
                        -- COMPILER [ARGS...]
"""
import argparse
import re
import subprocess
import sys

EXAMPLE = re.compile(r'^\s*// Example[^:]*:(.*)$')
EXAMPLE_LINE = re.compile(r'^\s*//   (.*)$')


def example_blocks(header):
    """The Example blocks of a header, each a list of code lines with leading and trailing spaces removed."""
    with open(header, encoding='utf-8') as f:
        lines = f.read().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        match = EXAMPLE.match(line)
        if not match:
            continue
        if match.group(1).strip():
            blocks.append([match.group(1).strip()])
            continue
        block = []
        for following in lines[i + 1:]:
            code = EXAMPLE_LINE.match(following)
            if not code:
                break
            block.append(code.group(1).strip())
        if block:
            blocks.append(block)
    return blocks


def missing_examples(source, headers):
    """The Example blocks of `headers` that do not appear in `source`, as (header, block) pairs."""
    with open(source, encoding='utf-8') as f:
        text = [line.strip() for line in f.read().splitlines()]
    missing = []
    for header in headers:
        for block in example_blocks(header):
            found = any(text[i:i + len(block)] == block for i in range(len(text) - len(block) + 1))
            if not found:
                missing.append((header, block))
    return missing


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--source', required=True)
    parser.add_argument('--case', required=True)
    parser.add_argument('--expect')
    parser.add_argument('--include', action='append', default=[])
    parser.add_argument('--examples-of', action='append', default=[])
    parser.add_argument('compiler', nargs='+')
    args = parser.parse_args()
    missing = missing_examples(args.source, args.examples_of)
    for header, block in missing:
        print('FAIL: this Example of %s is not in %s, verbatim:\n    %s' % (header, args.source, '\n    '.join(block)))
    if missing:
        return 1
    command = args.compiler + ['-std=c++20', '-fsyntax-only', '-Wall', '-Wextra', '-Wpedantic', '-Werror',
                               '-DWEFT_CASE=' + args.case]
    command += ['-I' + d for d in args.include] + [args.source]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = result.stdout
    if args.expect is None:
        if result.returncode != 0:
            print(output)
            print('FAIL: case %s of %s does not compile cleanly' % (args.case, args.source))
            return 1
        print('ok: case %s compiles' % args.case)
        return 0
    if result.returncode == 0:
        print('FAIL: case %s of %s compiled, but must be refused with: %s' % (args.case, args.source, args.expect))
        return 1
    if args.expect not in output:
        print(output)
        print('FAIL: case %s of %s was refused, but not with: %s' % (args.case, args.source, args.expect))
        return 1
    print('ok: case %s is refused with: %s' % (args.case, args.expect))
    return 0


if __name__ == '__main__':
    sys.exit(main())
