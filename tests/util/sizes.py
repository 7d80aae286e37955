#!/usr/bin/env python3
"""The house's size tables: non-test functions over 100/150/200 lines and files over 1 000 lines.

    python3 tests/util/sizes.py [ROOT] [--all] [--max-function N]

`--max-function N`: exit 1 when a non-test function is longer than N lines (tests/house.rs holds
the tree to 150).

Counts every `.rs` file under src/, mechanisms/, accounting/ and python/src (when present). A
function's length runs from its `fn` line to its closing brace, comments and blank lines included
(what a reader scrolls through). Items under `#[cfg(test)]` and files named `tests.rs` or
`*_tests.rs` are test code and not counted as functions (they are counted as files). A
brace-matching scan, not a parser: strings and comments are blanked before braces are counted.
"""
import os
import re
import sys

FN = re.compile(r'\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')


def blank(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return re.sub(r'//.*', '', line)


def item_end(lines, i):
    """Index of the line that closes the item starting at line i (its braces matched)."""
    depth, started = 0, False
    for j in range(i, len(lines)):
        s = blank(lines[j])
        for c in s:
            if c == '{':
                depth += 1
                started = True
            elif c == '}':
                depth -= 1
        if started and depth <= 0:
            return j
        if not started and s.rstrip().endswith(';'):
            return j
    return len(lines) - 1


def scan(root):
    fns, files = [], []
    for d in ['src', 'mechanisms', 'accounting', 'python/src']:
        for dp, dn, fn in os.walk(os.path.join(root, d)):
            dn[:] = [x for x in dn if x != 'target']
            for f in sorted(fn):
                if not f.endswith('.rs'):
                    continue
                p = os.path.join(dp, f)
                lines = open(p, encoding='utf-8').read().split('\n')
                rel = os.path.relpath(p, root)
                files.append((len(lines), rel))
                if f == 'tests.rs' or f.endswith('_tests.rs') or '/tests/' in rel:
                    continue
                i = 0
                while i < len(lines):
                    if re.match(r'\s*#\[cfg\(test\)\]', lines[i]):
                        i = item_end(lines, i + 1) + 1
                        continue
                    m = FN.match(lines[i])
                    if m:
                        j = item_end(lines, i)
                        fns.append((j - i + 1, rel, i + 1, m.group(7)))
                        i = j + 1
                        continue
                    i += 1
    return fns, files


def main():
    argv = sys.argv[1:]
    most = None
    if '--max-function' in argv:
        i = argv.index('--max-function')
        most = int(argv[i + 1])
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith('--')]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), '..', '..')
    fns, files = scan(root)
    fns.sort(key=lambda f: (-f[0], f[1]))
    files.sort(key=lambda f: (-f[0], f[1]))
    print(f"non-test functions: {len(fns)}; over 100 lines: {sum(f[0] > 100 for f in fns)}; "
          f"over 150: {sum(f[0] > 150 for f in fns)}; over 200: {sum(f[0] > 200 for f in fns)}")
    limit = 100 if '--all' in sys.argv else 150
    print(f"\n| lines | function | where |\n|---:|---|---|")
    for n, rel, line, name in fns:
        if n > limit:
            print(f"| {n} | `{name}` | {rel}:{line} |")
    print(f"\nfiles: {len(files)}; over 1 000 lines: {sum(f[0] > 1000 for f in files)}")
    print(f"\n| lines | file |\n|---:|---|")
    for n, rel in files:
        if n > 1000:
            print(f"| {n} | {rel} |")
    if most is not None:
        over = [f for f in fns if f[0] > most]
        for n, rel, line, name in over:
            print(f"too long: {name} at {rel}:{line} has {n} lines; allowed: at most {most} "
                  "(split it into named steps)", file=sys.stderr)
        if over:
            sys.exit(1)


if __name__ == '__main__':
    main()
