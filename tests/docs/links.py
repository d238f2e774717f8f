#!/usr/bin/env python3
"""Checks every relative link of the docs, without the network.

    tests/docs/links.py [BOOK_DIR]

1. The Markdown sources (README.md, docs/*.md, bench/README.md,
   bench/history/*.md): every relative link `[text](path#anchor)` names a
   file of the repository, and its anchor a heading of that file (GitHub's
   and mdBook's ids: lowercased, punctuation dropped, spaces to hyphens,
   repeats numbered); every `{{#include path:anchor}}` names a file holding
   that `ANCHOR:`. Links inside code are not links.
2. With BOOK_DIR (mdbook's output, e.g. target/book): every relative
   `href` and `src` of every page resolves to a file of the book and its
   `#fragment` to an `id` in it. A link that leaves the book (to a script or
   a page of bench/history/) is checked against the repository instead,
   where a reader of a checkout or a forge follows it.

Prints each broken link with its file and line, and exits 1 if there is any.
Standard library only.
"""

import glob
import html.parser
import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")


def sources():
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "bench", "README.md")]
    files += sorted(glob.glob(os.path.join(DOCS, "*.md")))
    files += sorted(glob.glob(os.path.join(ROOT, "bench", "history", "*.md")))
    return [f for f in files if os.path.exists(f)]


def rel(path):
    return os.path.relpath(path, ROOT)


def prose_lines(text):
    """Yields (line number, line) outside fenced code, inline code blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        m = re.match(r"(`{3,}|~{3,})", stripped)
        if m:
            if fence is None:
                fence = m.group(1)
                continue
            if stripped.startswith(fence) and stripped.strip("`~") == "":
                fence = None
                continue
        if fence is not None:
            continue
        yield n, re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)
    text = unicodedata.normalize("NFC", text).strip().lower()
    out = []
    for ch in text:
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


_anchors = {}


def anchors(path):
    """The ids of a Markdown file's headings."""
    if path not in _anchors:
        seen = {}
        ids = set()
        text = open(path, encoding="utf-8").read()
        for _, line in prose_lines_raw(text):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            k = seen.get(base, 0)
            ids.add(base if k == 0 else f"{base}-{k}")
            seen[base] = k + 1
        # explicit anchors: <a id="..."> / <a name="...">
        ids.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text))
        _anchors[path] = ids
    return _anchors[path]


def prose_lines_raw(text):
    """Like prose_lines, but keeps inline code (headings' ids use its text)."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        m = re.match(r"(`{3,}|~{3,})", stripped)
        if m:
            if fence is None:
                fence = m.group(1)
                continue
            if stripped.startswith(fence) and stripped.strip("`~") == "":
                fence = None
                continue
        if fence is None:
            yield n, line


LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s]+)\s*\}\}")


def external(target):
    return re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None


def check_sources(errors):
    count = 0
    for path in sources():
        text = open(path, encoding="utf-8").read()
        base = os.path.dirname(path)
        for n, line in prose_lines(text):
            for target in LINK.findall(line):
                if external(target):
                    continue
                count += 1
                file_part, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(base, file_part)) if file_part else path
                if not os.path.exists(dest):
                    errors.append(f"{rel(path)}:{n}: {target}: no such file")
                    continue
                if frag and dest.endswith(".md") and frag not in anchors(dest):
                    errors.append(f"{rel(path)}:{n}: {target}: no heading #{frag} in {rel(dest)}")
        for n, line in enumerate(text.split("\n"), 1):
            for spec in INCLUDE.findall(line):
                count += 1
                file_part, _, anchor = spec.partition(":")
                dest = os.path.normpath(os.path.join(base, file_part))
                if not os.path.exists(dest):
                    errors.append(f"{rel(path)}:{n}: include {spec}: no such file")
                elif anchor and not re.search(
                    rf"ANCHOR:\s*{re.escape(anchor)}\b", open(dest, encoding="utf-8").read()
                ):
                    errors.append(f"{rel(path)}:{n}: include {spec}: no ANCHOR: {anchor} in {rel(dest)}")
    return count


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append((self.getpos()[0], attrs[key]))


def check_book(book, errors):
    book = os.path.abspath(book)
    pages = {}
    for path in glob.glob(os.path.join(book, "**", "*.html"), recursive=True):
        page = Page()
        page.feed(open(path, encoding="utf-8").read())
        pages[os.path.normpath(path)] = page
    if not pages:
        errors.append(f"{book}: no HTML pages (was the book built?)")
        return 0
    count = 0
    for path, page in sorted(pages.items()):
        for n, target in page.links:
            if external(target) or target.startswith("//"):
                continue
            count += 1
            file_part, _, frag = target.partition("#")
            file_part = file_part.split("?", 1)[0]
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{os.path.relpath(path, book)}:{n}: {target}"
            if not dest.startswith(book + os.sep):
                # Left the book: a file of the repository, named from docs/.
                inside = os.path.relpath(dest, book)
                repo = os.path.normpath(os.path.join(DOCS, inside))
                if repo.endswith(".html") and not os.path.exists(repo):
                    repo = repo[: -len(".html")] + ".md"
                if not os.path.exists(repo):
                    errors.append(f"book {where}: leaves the book and names no file of the repository")
                continue
            if os.path.isdir(dest):
                dest = os.path.join(dest, "index.html")
            if not os.path.exists(dest):
                errors.append(f"book {where}: no such file in the book")
                continue
            if frag and dest in pages and frag not in pages[dest].ids:
                errors.append(f"book {where}: no id {frag!r} in {os.path.relpath(dest, book)}")
    return count


def main():
    errors = []
    n = check_sources(errors)
    print(f"links: {n} relative links and includes in the Markdown sources")
    if len(sys.argv) > 1:
        m = check_book(sys.argv[1], errors)
        print(f"links: {m} relative links in the built book")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"links: {len(errors)} broken", file=sys.stderr)
        sys.exit(1)
    print("links: none broken")


if __name__ == "__main__":
    main()
