#!/usr/bin/env python3
"""The floor plan's rules, checked over the source tree (docs/layout.md is the map they come from).

1. Includes: a file's quoted #include lines may name only the parts its own part may use (PARTS below).
2. Namespaces: an internal file opens only its part's namespace (and namespaces nested in it, or anonymous ones);
   some parts also define what a public header declares, in that header's namespace (SHARED_NAMESPACES), and
   some single files do (SHARED_BY_FILE). A namespace opened inside another counts by its full name
   (`namespace weft {` then `namespace detail {` opens weft::detail).
3. oneTBB is included by bench/ only.
4. The OS's own headers (POSIX, Linux, Windows) are included by src/ only among the library's parts: every kernel
   call goes through src/, the seam the next platforms need.

Usage: check_layers.py ROOT [--plant FILE:LINE]... ; --plant adds LINE to FILE's text before checking, so that a
test can show that a planted violation fails. Prints every violation, exits 1 if there is one.
"""
import pathlib
import re
import sys

# part: (folder, its namespace or None when it may open any, the parts it may include besides itself).
# Order matters only for matching: the longest folder that holds a file is its part.
PARTS = {
    'src': ('src', 'weft::os', []),
    'public': ('include/weft', None, []),
    'topology': ('scheduler/topology', 'weft::topology', ['src', 'public']),
    'atomics': ('scheduler/atomics', 'weft::atomics', ['src', 'public']),
    'lockfree': ('scheduler/lockfree', 'weft::lockfree', ['atomics', 'public']),
    'fiber': ('scheduler/fiber', 'weft::fiber', ['src', 'atomics', 'public']),
    'tracing': ('scheduler/tracing', 'weft::tracing', ['src', 'atomics', 'public']),
    'engine': ('scheduler/engine', 'weft::engine', ['src', 'topology', 'atomics', 'lockfree', 'fiber', 'tracing',
                                                     'public']),
    'sync': ('scheduler/sync', 'weft::sync', ['src', 'atomics', 'lockfree', 'fiber', 'tracing', 'engine', 'public']),
    'inbox': ('graph/inbox', 'weft::inbox', ['atomics', 'public']),
    'graph': ('graph', 'weft::graph', ['src', 'atomics', 'fiber', 'tracing', 'engine', 'sync', 'inbox', 'public']),
    'pipeline': ('graph/pipeline', 'weft::detail::pipeline',
                 ['src', 'atomics', 'fiber', 'tracing', 'engine', 'sync', 'inbox', 'graph', 'public']),
    # A user's program: the public headers only.
    'examples': ('docs/examples', None, ['public']),
}
# Namespaces a part's files may open besides their own: the definitions of what the public headers declare
# (weft::Pool's members, weft::detail's access structs and future states), which must live in the header's namespace.
SHARED_NAMESPACES = {
    'topology': ['weft', 'weft::detail'],  # weft::Topology's members, weft::placement, detail::TopologyAccess
    'engine': ['weft', 'weft::detail'],
    'sync': ['weft', 'weft::detail'],
    'tracing': ['weft'],
    'graph': ['weft'],
    'pipeline': ['weft::detail'],
}
# Single files that may open a namespace besides their part's (and its SHARED_NAMESPACES): graph/'s own types are
# in weft::graph, and only the access structs a public header declares in weft::detail are defined there.
SHARED_BY_FILE = {
    'graph/subflow_access.hpp': ['weft::detail'],  # detail::SubflowAccess, Subflow's friend (weft/subflow.hpp)
    'graph/semaphore.cpp': ['weft::detail'],  # detail::SemaphoreAccess, Semaphore's friend (weft/semaphore.hpp)
    'graph/task_graph.cpp': ['weft::detail'],  # detail::GraphAccess's members (weft/task_graph.hpp)
    # Forward-declares graph::RunState (the graph/ part it may include), sparing its includers run_state.hpp.
    'graph/pipeline/pipeline_run.hpp': ['weft::graph'],
}
TOP_FOLDERS = ['src', 'include', 'scheduler', 'graph', 'tests', 'bench', 'docs']
TBB = re.compile(r'^\s*#\s*include\s*[<"](tbb|oneapi)/', re.M)
OS_HEADER = re.compile(r'^\s*#\s*include\s*<((?:sys|linux|asm|arpa|netinet)/[\w/]+\.h|unistd\.h|pthread\.h|signal\.h|'
                       r'sched\.h|fcntl\.h|dlfcn\.h|errno\.h|windows\.h|synchapi\.h)>', re.M)
# The library's parts other than src/: the OS's headers are src/'s alone.
LIBRARY_PARTS = ['public', 'topology', 'atomics', 'lockfree', 'fiber', 'tracing', 'engine', 'sync', 'inbox', 'graph', 'pipeline']
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# A namespace opened (named or anonymous) or closed; the closing brace carries its comment (`}  // namespace x`),
# as every file's does.
NAMESPACE_LINE = re.compile(r'^(?:namespace ([\w:]+ )?\{|\}\s*// namespace\b)', re.M)


def opened_namespaces(text):
    """The full names of the named namespaces `text` opens, and whether its opens and closes balance."""
    stack, opened = [], []
    for match in NAMESPACE_LINE.finditer(text):
        if match.group(0).startswith('}'):
            if not stack:
                return opened, False
            stack.pop()
            continue
        name = (match.group(1) or '').strip()
        outer = stack[-1] if stack else ''
        full = f'{outer}::{name}' if outer and name else (name or outer)
        stack.append(full)
        if name:
            opened.append(full)
    return opened, not stack


def part_of(path):
    best = None
    for name, (folder, _, _) in PARTS.items():
        if path.startswith(folder + '/') and (best is None or len(folder) > len(PARTS[best][0])):
            best = name
    return best


def target_of(include):
    if include.startswith('weft/'):
        return 'public'
    return part_of(include)


def check(root, plants):
    # Walks the source folders rather than asking git: a `meson dist` tarball has no repository.
    files = [str(p.relative_to(root)) for top in TOP_FOLDERS for p in (root / top).rglob('*') if p.is_file()]
    errors = []
    for path in sorted(set(files)):
        if not path.endswith(('.hpp', '.cpp', '.h')) or not (root / path).exists():
            continue
        text = (root / path).read_text(errors='replace') + ''.join('\n' + line for line in plants.get(path, []))
        if TBB.search(text) and not path.startswith('bench/'):
            errors.append(f'{path}: includes oneTBB, which only bench/ may use')
        os_header = OS_HEADER.search(text)
        if os_header and part_of(path) in LIBRARY_PARTS:
            errors.append(f'{path}: includes <{os_header.group(1)}>, an OS header: kernel calls go through src/ '
                          '(docs/layout.md)')
        part = part_of(path)
        if part is None:
            continue
        folder, namespace, allowed = PARTS[part]
        for include in INCLUDE.findall(text):
            target = target_of(include)
            if target is None or target == part or target in allowed:
                continue
            errors.append(f'{path}: includes "{include}" ({PARTS[target][0]}/), which {folder}/ may not include '
                          f'(it may include: {", ".join(PARTS[a][0] + "/" for a in allowed) or "nothing of weft"})')
        if namespace is None:
            continue
        shared = SHARED_NAMESPACES.get(part, []) + SHARED_BY_FILE.get(path, [])
        opened_all, balanced = opened_namespaces(text)
        if not balanced:
            errors.append(f'{path}: its namespaces do not balance (each must close with "}}  // namespace ...")')
        for opened in opened_all:
            if opened == namespace or opened.startswith(namespace + '::') or opened in shared:
                continue
            if opened != 'weft' and not opened.startswith('weft::'):
                continue  # a library's (std::hash specializations and the like)
            errors.append(f'{path}: opens namespace {opened}; files in {folder}/ belong to {namespace}'
                          + (f' (besides it, this file may open {", ".join(shared)}: see SHARED_NAMESPACES and '
                             'SHARED_BY_FILE)' if shared else ''))
    return errors


def main(argv):
    root = pathlib.Path(argv[1]).resolve()
    plants = {}
    args = argv[2:]
    while args:
        if args[0] != '--plant' or len(args) < 2:
            sys.exit('usage: check_layers.py ROOT [--plant FILE:LINE]...')
        path, _, line = args[1].partition(':')
        plants.setdefault(path, []).append(line)
        args = args[2:]
    errors = check(root, plants)
    for error in errors:
        print(error)
    print(f'check_layers: {len(errors)} violation(s)' if errors else 'check_layers: every include and namespace '
          'follows docs/layout.md')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
