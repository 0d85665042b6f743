#!/usr/bin/python3
"""Every doctest::Approx in the C++ tests states its scale.

doctest compares |a - b| < epsilon * (scale + max(|a|, |b|)) with a default
scale of 1, so an epsilon is an absolute tolerance for values well below 1:
Approx(t).epsilon(0.1) passes any time t of a few microseconds. `.scale(0)`
makes the tolerance relative; `.scale(1)` keeps it absolute, where that is
meant (an expected value of exactly 0). Prints each chain without a scale as
FILE:LINE and exits 1 if there is one.

Usage: approx_scale.py TESTS_DIR
"""
import os
import re
import sys

KEY = "doctest::Approx("


def closing(text, start):
    """Index just past the parenthesis that closes the one before `start`."""
    depth = 1
    while depth:
        depth += {"(": 1, ")": -1}.get(text[start], 0)
        start += 1
    return start


def unscaled(text):
    """Line numbers of the Approx chains in `text` that set no scale."""
    lines = []
    at = text.find(KEY)
    while at >= 0:
        end = closing(text, at + len(KEY))
        scaled = False
        while True:
            link = re.match(r"\s*\.(epsilon|scale)\(", text[end:])
            if not link:
                break
            scaled = scaled or link.group(1) == "scale"
            end = closing(text, end + link.end())
        if not scaled:
            lines.append(text.count("\n", 0, at) + 1)
        at = text.find(KEY, end)
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    found = 0
    for folder, _, files in os.walk(sys.argv[1]):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as source:
                for line in unscaled(source.read()):
                    print(f"{path}:{line}: doctest::Approx without .scale(...)")
                    found += 1
    if found:
        sys.exit(1)
    print("every doctest::Approx states its scale")


if __name__ == "__main__":
    main()
