# SPDX-License-Identifier: Apache-2.0
"""The metrics of src/util/metrics.def, read for the Python checks."""
import re

DEF_RE = re.compile(
    r'CO_METRIC\(\s*(\w+),\s*"([^"]+)",\s*(\w+),\s*"(?:[^"\\]|\\.)*"\s*,'
    r'\s*(NULL|"[^"]*")\s*,\s*(NULL|METRICS_DYNAMIC|"[^"]*")\s*\)', re.S)


def read_def(path):
    """{name: (type, label or None, [values] or None)} from metrics.def."""
    text = open(path, encoding="utf-8").read()
    # help texts may be split over lines as adjacent C strings
    text = re.sub(r'"\s*\n\s*"', "", text)
    out = {}
    for m in DEF_RE.finditer(text):
        _, name, typ, label, values = m.groups()
        label = None if label == "NULL" else label.strip('"')
        if values in ("NULL", "METRICS_DYNAMIC"):
            values = None
        else:
            values = values.strip('"').split("|")
        out[name] = (typ.lower(), label, values)
    return out


# Rendered by metrics.c beside metrics.def's: what the process runs and
# the standard process metrics of Prometheus' client libraries.
# metrics_exposition_parse checks that the exposition holds exactly these.
STANDARD = {
    "chargeonce_build_info": ("gauge", ["version", "commit"]),
    "process_cpu_seconds_total": ("counter", None),
    "process_open_fds": ("gauge", None),
    "process_max_fds": ("gauge", None),
    "process_virtual_memory_bytes": ("gauge", None),
    "process_resident_memory_bytes": ("gauge", None),
    "process_start_time_seconds": ("gauge", None),
}


def series_names(defs):
    """Every series name a query may use: histograms with their suffixes,
    and the STANDARD metrics."""
    names = set(STANDARD)
    for name, (typ, _, _) in defs.items():
        if typ == "histogram":
            names.update(name + s for s in ("_bucket", "_sum", "_count"))
        else:
            names.add(name)
    return names
