#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house of src/ (docs/architecture.md, "Modules"), checked on every
#include "module/file.h" of src/: an include goes to the same module or to a
module on a lower floor, never sideways between two engines or two
adapters, never up; only main.c and cmd/ include util/config.h; and no
file reads a key by its name (config_str(cfg, "key") and the like): the
typed struct settings of config_settings() is the one way in.

usage: layers.py SRC_DIR      exit 0 when the house holds, 1 with the
                              offending lines otherwise
"""
import os
import re
import sys

FLOORS = {
    "main": 5,
    "cmd": 4,
    "pipeline": 3, "relay": 3, "reconcile": 3, "http": 3, "ops": 3,
    "store": 2, "kafka": 2, "gateway": 2, "intent": 2,
    "payment": 1, "flow": 1,
    "util": 0,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')
BY_NAME = re.compile(r'\bconfig_(str|int|bool|ms)\s*\(')


def module_of(src, path):
    rel = os.path.relpath(path, src)
    return "main" if rel == "main.c" else rel.split(os.sep)[0]


def main():
    src = sys.argv[1]
    bad = []
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            mod = module_of(src, path)
            if mod not in FLOORS:
                bad.append(f"{path}: module {mod} has no floor")
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if (BY_NAME.search(line) and not
                            path.endswith(os.path.join("util", "config.c")) and
                            not path.endswith(os.path.join("util", "config.h"))):
                        bad.append(f"{os.path.relpath(path, src)}:{n}: reads "
                                   "a configuration key by name: use "
                                   "config_settings()")
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    to = m.group(1)
                    where = f"{os.path.relpath(path, src)}:{n}"
                    if to not in FLOORS:
                        bad.append(f"{where}: includes unknown module {to}")
                    elif to == mod:
                        pass
                    elif FLOORS[to] >= FLOORS[mod]:
                        bad.append(f"{where}: {mod} (floor {FLOORS[mod]}) "
                                   f"includes {to} (floor {FLOORS[to]})")
                    if ("util/config.h" in line and mod not in ("main", "cmd")
                            and not path.endswith(os.path.join("util", "config.c"))):
                        bad.append(f"{where}: only main.c and cmd/ read the "
                                   "configuration")
    for b in bad:
        print(b)
    print(f"layers: {'broken' if bad else 'ok'} ({len(bad)} problem(s))")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
