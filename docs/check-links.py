#!/usr/bin/env python3
"""Check the relative links of README.md and docs/**/*.md.

Every `[text](path#anchor)` link that is not a URL must name a file or directory that exists
(relative to the page), and its anchor, if any, must match a heading of the target page under
GitHub's slug rules (lower case; punctuation other than `-` and `_` dropped; spaces become `-`;
a repeated heading gets `-1`, `-2`, …). Links inside fenced code blocks and inline code are
ignored.

Usage, from the repository root:

    python3 docs/check-links.py [--allow-missing PREFIX ...]

`--allow-missing docs/seeds/` reports missing files under that prefix as pending instead of
broken (pages written on another branch). Exits 1 if any link is broken.
"""
import pathlib
import re
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(text):
    """Yield (line number, line) outside fenced code blocks, with inline code removed."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def slug(heading):
    text = re.sub(r"`([^`]*)`", r"\1", heading)           # inline code keeps its text
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                    # HTML tags
    text = text.lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        for _, line in strip_code(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            result.add(s if k == 0 else f"{s}-{k}")
        cache[path] = result
    return cache[path]


def main(argv):
    allow = []
    while argv:
        if argv[0] == "--allow-missing" and len(argv) > 1:
            allow.append(argv[1])
            argv = argv[2:]
        else:
            sys.exit(f"usage: {sys.argv[0]} [--allow-missing PREFIX ...]")
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    checked, broken, pending = 0, [], []
    for page in pages:
        for n, line in strip_code(page.read_text(encoding="utf-8")):
            line = re.sub(r"`[^`]*`", "", line)
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                checked += 1
                where = f"{page.relative_to(ROOT)}:{n}: {target}"
                file_part, _, anchor = target.partition("#")
                dest = (page.parent / file_part).resolve() if file_part else page
                if not dest.exists():
                    rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
                    if any(rel.startswith(p.rstrip("/") + "/") or rel == p for p in allow):
                        pending.append(where)
                    else:
                        broken.append(f"{where}  (no such file)")
                    continue
                if anchor and dest.suffix == ".md" and anchor.lower() not in anchors(dest):
                    broken.append(f"{where}  (no heading with this anchor)")
    for p in pending:
        print(f"pending: {p}  (not in this checkout)")
    for b in broken:
        print(f"broken: {b}")
    print(f"{checked} links in {len(pages)} pages: {len(broken)} broken, {len(pending)} pending")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
