#!/usr/bin/env python3
"""Compiles one case of a test source (-DWEFT_CASE=<case>, syntax only) and checks the outcome.

Without --expect the case must compile cleanly under -Wall -Wextra -Wpedantic -Werror. With --expect it must
fail, and the compiler's output must contain the expected text (a static_assert's message, say): a refusal
for any other reason (a typo in the test) does not count.

With --examples-of HEADER (repeatable), every Example block in the header's comments must also appear in the
source, line for line (leading spaces aside): so a source that copies the headers' examples compiles exactly
what the headers show, and goes stale loudly when an example changes. A block is "// Example: code" on one
line, or "// Example:" (or "// Example (what):") followed by lines "//   code".

--std picks the language standard (c++20 unless told). With --each-public-header DIR the source is compiled once
per public header (each *.hpp directly in DIR, in name order), with -DWEFT_HEADER=<weft/NAME>, and every one must
give the outcome asked for. With --max-lines N a refusal must be short: at most N lines of compiler output, and
its first error the expected one (one clear error, not pages of errors from templates). With --umbrella HEADER,
HEADER must #include every other public header of its directory, so an all-in-one header cannot fall behind.

usage: check_compile.py --source FILE --case N [--expect TEXT] [--include DIR]... [--examples-of HEADER]...
                        [--std STD] [--each-public-header DIR] [--max-lines N] [--umbrella HEADER]
                        -- COMPILER [ARGS...]
"""
import argparse
import os
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


def layout_free(text):
    """The text without its layout: whitespace between two words becomes one space, and any other goes. clang-format
    may lay a block out differently in the header's comment and in the source; only the code has to be the same."""
    return re.sub(r'\s+', '', re.sub(r'(?<=\w)\s+(?=\w)', ' ', text))


def missing_examples(source, headers):
    """The Example blocks of `headers` that do not appear in `source` (the same code, laid out in any way), as
    (header, block) pairs."""
    with open(source, encoding='utf-8') as f:
        text = layout_free(f.read())
    missing = []
    for header in headers:
        for block in example_blocks(header):
            if layout_free(' '.join(block)) not in text:
                missing.append((header, block))
    return missing


ERROR_LINE = re.compile(r'\berror\b')
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"]weft/([^>"]+)[>"]')


def public_headers(directory):
    """The public headers of `directory`: its *.hpp files (not those of detail/), in name order."""
    return sorted(name for name in os.listdir(directory)
                  if name.endswith('.hpp') and os.path.isfile(os.path.join(directory, name)))


def missing_from_umbrella(umbrella):
    """The public headers beside `umbrella` that it does not #include."""
    with open(umbrella, encoding='utf-8') as f:
        included = {m.group(1) for m in map(INCLUDE_LINE.match, f.read().splitlines()) if m}
    own = os.path.basename(umbrella)
    return [h for h in public_headers(os.path.dirname(umbrella)) if h != own and h not in included]


def check_case(args, defines, what):
    """Compiles the source once with `defines`; prints the verdict for `what`; True if the outcome is right."""
    command = args.compiler + ['-std=' + args.std, '-fsyntax-only', '-Wall', '-Wextra', '-Wpedantic', '-Werror',
                               '-DWEFT_CASE=' + args.case] + ['-D' + d for d in defines]
    command += ['-I' + d for d in args.include] + [args.source]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = result.stdout
    if args.expect is None:
        if result.returncode != 0:
            print(output)
            print('FAIL: %s does not compile cleanly' % what)
            return False
        print('ok: %s compiles' % what)
        return True
    if result.returncode == 0:
        print('FAIL: %s compiled, but must be refused with: %s' % (what, args.expect))
        return False
    if args.expect not in output:
        print(output)
        print('FAIL: %s was refused, but not with: %s' % (what, args.expect))
        return False
    if args.max_lines is not None:
        lines = output.splitlines()
        first_error = next((line for line in lines if ERROR_LINE.search(line)), '')
        if len(lines) > args.max_lines or args.expect not in first_error:
            print('\n'.join(lines[:60]))
            print('FAIL: %s was refused with %d lines of output, first error "%s"; expected at most %d lines, '
                  'the first error saying: %s' % (what, len(lines), first_error, args.max_lines, args.expect))
            return False
    print('ok: %s is refused with: %s' % (what, args.expect))
    return True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--source', required=True)
    parser.add_argument('--case', required=True)
    parser.add_argument('--expect')
    parser.add_argument('--include', action='append', default=[])
    parser.add_argument('--examples-of', action='append', default=[])
    parser.add_argument('--std', default='c++20')
    parser.add_argument('--each-public-header')
    parser.add_argument('--max-lines', type=int)
    parser.add_argument('--umbrella')
    parser.add_argument('compiler', nargs='+')
    args = parser.parse_args()
    missing = missing_examples(args.source, args.examples_of)
    for header, block in missing:
        print('FAIL: this Example of %s is not in %s (the same code, whitespace aside):\n    %s' % (header, args.source, '\n    '.join(block)))
    if missing:
        return 1
    if args.umbrella:
        left_out = missing_from_umbrella(args.umbrella)
        if left_out:
            print('FAIL: %s does not #include these public headers: %s' % (args.umbrella, ', '.join(left_out)))
            return 1
    if args.each_public_header is None:
        return 0 if check_case(args, [], 'case %s of %s' % (args.case, args.source)) else 1
    headers = public_headers(args.each_public_header)
    if not headers:
        print('FAIL: no public headers (*.hpp) in %s' % args.each_public_header)
        return 1
    failed = [h for h in headers
              if not check_case(args, ['WEFT_HEADER=<weft/%s>' % h], '%s including <weft/%s>' % (args.source, h))]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
