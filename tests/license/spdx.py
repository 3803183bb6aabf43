#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""spdx_headers: every tracked source file starts with
`SPDX-License-Identifier: Apache-2.0`, in its language's comment syntax,
on its first line (its second after a shebang).

  spdx.py --root SOURCE_DIR            check (exit 1 listing the files)
  spdx.py --root SOURCE_DIR --list     the files that lack it
  spdx.py --root SOURCE_DIR --add F... prepend the line to each F

Source files: C (.c .h .def), shell (.sh, or a shebang naming sh/bash),
Python (.py, or a python shebang), CMake (CMakeLists.txt, .cmake), SQL
(.sql: cmake/embed_sql.cmake leaves the tag line out of what `migrate`
applies and records), Promela (.pml), gnuplot (.gp), systemd units
(.service, .service.in), Dockerfiles, YAML (.yml .yaml). Not: Markdown,
JSON (no comments), test data (fuzz corpora, examples, results), the
configuration examples. The files are git's (git ls-files), else every
file under the root.
"""
import argparse
import os
import re
import subprocess
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
# test data, results, and .ci/ (the entry point the CI machinery runs)
SKIP_DIRS = ("tests/fuzz/corpus/", "tests/intent/examples/", "bench/results/",
             "model/trails/", "build", ".ci/")


def style(path, first):
    """The comment form of the tag for path, or None: not a source file."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    if ext in (".c", ".h", ".def", ".pml"):
        return "/* %s */" % TAG
    if ext == ".sql":
        return "-- %s" % TAG
    if ext in (".sh", ".py", ".cmake", ".gp", ".yml", ".yaml") or \
            name in ("CMakeLists.txt", "Dockerfile") or \
            name.endswith((".service", ".service.in")):
        return "# %s" % TAG
    if not ext and first.startswith("#!") and \
            re.search(r"\b(ba)?sh\b|python", first):
        return "# %s" % TAG
    return None


def files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                             capture_output=True, check=True).stdout
        names = [n.decode() for n in out.split(b"\0") if n]
    except (subprocess.CalledProcessError, FileNotFoundError):
        names = []
        for base, dirs, fs in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            names += [os.path.relpath(os.path.join(base, f), root) for f in fs]
    for n in sorted(names):
        if n.startswith(SKIP_DIRS) or not os.path.isfile(os.path.join(root, n)):
            continue
        yield n


def first_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [f.readline() for _ in range(2)]
    except UnicodeDecodeError:
        return ["", ""]


def has_tag(lines, want):
    i = 1 if lines[0].startswith("#!") else 0
    return lines[i].rstrip("\n") == want


def lacking(root):
    out = []
    for n in files(root):
        lines = first_lines(os.path.join(root, n))
        want = style(n, lines[0])
        if want and not has_tag(lines, want):
            out.append(n)
    return out


def add(root, names):
    for n in names:
        p = os.path.join(root, n)
        text = open(p, encoding="utf-8").read()
        want = style(n, text.split("\n", 1)[0])
        if not want or has_tag((text.split("\n", 2) + ["", ""])[:2], want):
            continue
        if text.startswith("#!"):
            shebang, rest = text.split("\n", 1)
            text = shebang + "\n" + want + "\n" + rest
        else:
            text = want + "\n" + text
        mode = os.stat(p).st_mode
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(p, mode)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--add", nargs="*")
    a = ap.parse_args()
    if a.add is not None:
        add(a.root, a.add)
        return 0
    bad = lacking(a.root)
    if a.list:
        print("\n".join(bad))
        return 0
    for n in bad:
        print("FAIL: %s: no '%s' on its first line (second after a "
              "shebang)" % (n, TAG))
    print("spdx: %d source file(s) without the licence tag" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
