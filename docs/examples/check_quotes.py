#!/usr/bin/env python3
"""Every ```cpp block of a markdown file must appear in one of the given source files, line for line (leading and
trailing spaces aside): so the document shows only code that is compiled and run, and goes stale loudly when
that code changes.

usage: check_quotes.py DOC SOURCE...
"""
import re
import sys

FENCE = re.compile(r'^```cpp\s*$')


def cpp_blocks(doc):
    """The ```cpp blocks of `doc`, each as (first line number, lines with leading and trailing spaces removed)."""
    with open(doc, encoding='utf-8') as f:
        lines = f.read().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i + 1
            i = start
            while i < len(lines) and lines[i].strip() != '```':
                i += 1
            if i == len(lines):
                raise SystemExit('%s:%d: a ```cpp block is never closed' % (doc, start))
            blocks.append((start + 1, [line.strip() for line in lines[start:i]]))
        i += 1
    return blocks


def layout_free(text):
    """The text without its layout: whitespace between two words becomes one space, and any other goes. clang-format
    lays the compiled sources out, and a doc may wrap a line elsewhere; only the code has to be the same."""
    return re.sub(r'\s+', '', re.sub(r'(?<=\w)\s+(?=\w)', ' ', text))


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    doc, sources = sys.argv[1], sys.argv[2:]
    texts = []
    for source in sources:
        with open(source, encoding='utf-8') as f:
            texts.append(layout_free(f.read()))
    blocks = cpp_blocks(doc)
    if not blocks:
        print('FAIL: %s has no ```cpp block' % doc)
        return 1
    missing = 0
    for line, block in blocks:
        if not any(layout_free('\n'.join(block)) in text for text in texts):
            print('FAIL: %s:%d: this block is in none of %s (the same code, whitespace aside):\n    %s'
                  % (doc, line, ', '.join(sources), '\n    '.join(block)))
            missing += 1
    if missing:
        return 1
    print('ok: the %d C++ blocks of %s are compiled code' % (len(blocks), doc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
