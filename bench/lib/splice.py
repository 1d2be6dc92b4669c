#!/usr/bin/env python3
"""Puts a section into RESULTS.md without running bench/run again.

    splice.py RESULTS.md TITLE SECTION.md

SECTION.md starts with "## TITLE". It replaces the section of that title in
RESULTS.md, or goes in before the "Raw per-round figures" line (or at the
end) when there is none."""

import os
import re
import sys


def main():
    results, title, section_path = sys.argv[1:4]
    with open(section_path) as f:
        section = f.read().rstrip() + "\n\n"
    text = ""
    if os.path.exists(results):
        with open(results) as f:
            text = f.read()
    pattern = re.compile(r"^## " + re.escape(title) + r"\n.*?(?=^## |^Raw per-round figures|\Z)",
                         re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda m: section, text, count=1)
    elif "Raw per-round figures" in text:
        i = text.index("Raw per-round figures")
        text = text[:i] + section + text[i:]
    else:
        text += "\n" + section
    with open(results, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
