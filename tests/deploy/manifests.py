#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""deploy_manifests: the deployment files run what they claim.

  1. every manifest of deploy/kubernetes/ passes `kubernetes-validate
     --strict` (the Kubernetes API's own schemas, bundled: offline);
  2. docs/prometheus/alerts.yml passes `promtool check rules`, and
     `promtool test rules tests/deploy/alerts_test.yml` (what fires, what
     does not);
  3. the manifests agree with the binary: every key of the ConfigMap's
     chargeonce.conf is one `chargeonce --help` lists (or its <key>_file,
     or kafka.*), and the binary itself accepts the file as the pods get
     it (production mode included: --dump-config with the Secret's files
     laid out as mounted, dummy values of the right shape); every
     <key>_file and TLS path is a file of a Secret mounted there, in the
     StatefulSet and in the migrate Job (the binary reads every secret
     file at start, whatever the command); the env names keys; the pod's
     name becomes worker.id (static membership); the probes ask /healthz
     (liveness) and /readyz (readiness) on the port of http.listen, over
     HTTPS since the file sets the TLS pair, and a running chargeonce
     answers both paths and /metrics with chargeonce_build_info and the
     process_* metrics; the grace period outlasts the drain; the
     Services and the PodDisruptionBudget select the pods; the migrate
     Job runs migrate with the same configuration;
  4. docker/compose.yaml: chargeonce listens on 0.0.0.0:9108 in its
     container, the port is published, its healthcheck asks /readyz with
     a tool the image has, and every CHARGEONCE_* variable names a key
     (the binary, given them, says nothing of them).

usage: manifests.py --bin CHARGEONCE --root SOURCE_DIR
                    [--kubernetes-validate PATH] [--promtool PATH]
The tools are looked up on PATH, kubernetes-validate also in the virtual
environment scripts/install-deps.sh makes (TOOLS_VENVS below).
"""
import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import yaml
except ImportError:
    print("python3-yaml is missing: scripts/install-deps.sh installs it",
          file=sys.stderr)
    sys.exit(1)

problems = []

# where scripts/install-deps.sh installs scripts/requirements-tools.txt
TOOLS_VENVS = ("/opt/chargeonce-tools/venv",
               os.path.expanduser("~/.local/share/chargeonce-tools/venv"))


def find_tool(name):
    found = shutil.which(name)
    if found:
        return found
    for v in TOOLS_VENVS:
        p = os.path.join(v, "bin", name)
        if os.access(p, os.X_OK):
            return p
    return None


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def ok(msg):
    print("ok " + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def help_keys(binary):
    """The keys `chargeonce --help` lists: {key: secret?}."""
    out = run([binary, "--help"]).stdout
    keys, on = {}, False
    for line in out.splitlines():
        if line.startswith("configuration keys"):
            on = True
            continue
        if on and line.startswith("  "):
            name = line.split()[0]
            if "<property>" not in name:
                keys[name] = line.rstrip().endswith("(secret)")
    if len(keys) < 40:
        problem("--help lists only %d keys" % len(keys))
    return keys


def parse_conf(text):
    """key = value lines of a configuration file, in order."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            problem("chargeonce.conf:%d: not key = value" % n)
            continue
        k, v = line.split("=", 1)
        out.append((k.strip(), v.strip()))
    return out


def load_manifests(kdir):
    docs = {}
    for f in sorted(os.listdir(kdir)):
        if not f.endswith(".yaml"):
            continue
        for d in yaml.safe_load_all(open(os.path.join(kdir, f))):
            if d:
                docs[(d["kind"], d["metadata"]["name"])] = d
    return docs


def validate(kv, kdir):
    files = sorted(os.path.join(kdir, f) for f in os.listdir(kdir)
                   if f.endswith(".yaml"))
    if not files:
        problem("no manifest in %s" % kdir)
        return
    r = run([kv, "--strict", "--quiet"] + files)
    if r.returncode != 0:
        problem("kubernetes-validate --strict: %s%s" % (r.stdout, r.stderr))
    else:
        ok("kubernetes-validate --strict: %d file(s)" % len(files))


def promtool(pt, root):
    r = run([pt, "check", "rules",
             os.path.join(root, "docs/prometheus/alerts.yml")])
    if r.returncode != 0:
        problem("promtool check rules: %s%s" % (r.stdout, r.stderr))
    else:
        ok("promtool check rules: " + r.stdout.strip().splitlines()[-1].strip())
    r = run([pt, "test", "rules",
             os.path.join(root, "tests/deploy/alerts_test.yml")])
    if r.returncode != 0:
        problem("promtool test rules: %s%s" % (r.stdout, r.stderr))
    else:
        ok("promtool test rules tests/deploy/alerts_test.yml")


def secret_files(docs, name):
    """The file names of Secret `name` (data and stringData)."""
    s = docs.get(("Secret", name))
    if not s:
        problem("no Secret %s in the manifests" % name)
        return set()
    return set(s.get("data", {})) | set(s.get("stringData", {}))


def mounted_files(docs, pod, container):
    """{path: (kind, source name, key)} of every file a container sees
    through its volumes (Secrets and ConfigMaps)."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    out = {}
    for m in container.get("volumeMounts", []):
        v = vols.get(m["name"])
        if not v:
            problem("volumeMount %s has no volume" % m["name"])
            continue
        if "secret" in v:
            kind, src = "Secret", v["secret"]["secretName"]
            keys = secret_files(docs, src)
        elif "configMap" in v:
            kind, src = "ConfigMap", v["configMap"]["name"]
            keys = set(docs.get(("ConfigMap", src), {}).get("data", {}))
        else:
            continue
        if m.get("subPath"):
            out[m["mountPath"]] = (kind, src, m["subPath"])
        else:
            for k in keys:
                out[os.path.join(m["mountPath"], k)] = (kind, src, k)
    return out


def dummy_secret(name):
    if name == "db_conninfo":
        return "host=db.example dbname=chargeonce user=co sslmode=verify-full"
    if name == "webhook_secret":
        return "whsec_" + base64.b64encode(b"w" * 32).decode()
    return "s" * 40


def check_conf(binary, keys, conf_text, env, tmp, what):
    """The binary accepts conf_text with its secret files laid out under
    tmp: the rewritten file and the dump."""
    entries = parse_conf(conf_text)
    for k, _ in entries:
        base = k[:-5] if k.endswith("_file") else k
        if k.startswith("kafka."):
            continue
        if k in keys or (k.endswith("_file") and keys.get(base)) or \
                k == "webhook.secret_file":
            continue
        problem("%s: %s is not a key of `chargeonce --help`" % (what, k))
    lines = []
    for k, v in entries:
        if k.endswith("_file") or k.startswith("http.tls_"):
            local = os.path.join(tmp, "files", v.lstrip("/"))
            os.makedirs(os.path.dirname(local), exist_ok=True)
            with open(local, "w") as f:
                f.write(dummy_secret(os.path.basename(v)) + "\n")
            v = local
        lines.append("%s = %s" % (k, v))
    path = os.path.join(tmp, what + ".conf")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    e.update(env)
    r = run([binary, "--config", path, "--dump-config"], env=e)
    if r.returncode != 0:
        problem("%s: chargeonce --dump-config exit %d: %s" %
                (what, r.returncode, r.stderr.strip()))
        return {}
    if "names no configuration key" in r.stderr:
        problem("%s: a variable names no key: %s" % (what, r.stderr))
    dump = dict(l.split(" = ", 1) for l in r.stdout.splitlines()
                if " = " in l)
    return dump


def duration_s(v):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", v)
    mult = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
    return int(m.group(1)) * mult[m.group(2)]


def check_kubernetes(binary, keys, root, tmp):
    kdir = os.path.join(root, "deploy/kubernetes")
    docs = load_manifests(kdir)
    need = [("ConfigMap", "chargeonce-config"), ("StatefulSet", "chargeonce"),
            ("Job", "chargeonce-migrate-1-0-0"),
            ("PodDisruptionBudget", "chargeonce"), ("Service", "chargeonce"),
            ("Service", "chargeonce-headless"),
            ("Secret", "chargeonce-secrets"), ("Secret", "chargeonce-tls")]
    for n in need:
        if n not in docs:
            problem("deploy/kubernetes: no %s %s" % n)
    if problems:
        return
    conf = docs[("ConfigMap", "chargeonce-config")]["data"]["chargeonce.conf"]
    entries = dict(parse_conf(conf))
    sts = docs[("StatefulSet", "chargeonce")]
    pod = sts["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {}
    for e in c.get("env", []):
        if not e["name"].startswith("CHARGEONCE_"):
            continue
        if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == \
                "metadata.name":
            env[e["name"]] = sts["metadata"]["name"] + "-0"
        else:
            env[e["name"]] = e.get("value", "")
    dump = check_conf(binary, keys, conf, env, tmp, "statefulset")
    if dump:
        for k, want in (("security.mode", "production"),
                        ("worker.id", sts["metadata"]["name"] + "-0"),
                        ("group.instance.id", "")):
            if dump.get(k) != want:
                problem("statefulset: %s = %r, want %r" %
                        (k, dump.get(k), want))
        ok("the binary accepts the StatefulSet's configuration in production "
           "mode; worker.id = %s (static membership)" % dump.get("worker.id"))
    # the --config path is the ConfigMap's file
    args = c.get("args", [])
    files = mounted_files(docs, pod, c)
    if "--config" not in args or args[-1] != "consume":
        problem("statefulset: args %r are not --config FILE ... consume" % args)
    else:
        cpath = args[args.index("--config") + 1]
        if files.get(cpath) != ("ConfigMap", "chargeonce-config",
                                "chargeonce.conf"):
            problem("statefulset: %s is not chargeonce-config's "
                    "chargeonce.conf" % cpath)
    for k, v in entries.items():
        if (k.endswith("_file") or k.startswith("http.tls_")) and \
                v not in files:
            problem("statefulset: %s = %s is no mounted Secret file" % (k, v))
    # probes: the paths, the port of http.listen, HTTPS with the TLS pair
    listen = entries.get("http.listen", "127.0.0.1:9108")
    host, port = listen.rsplit(":", 1)
    if host in ("127.0.0.1", "localhost", "[::1]"):
        problem("http.listen %s: the kubelet cannot reach loopback" % listen)
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    scheme = "HTTPS" if entries.get("http.tls_cert_file") else "HTTP"
    for probe, path in (("livenessProbe", "/healthz"),
                        ("readinessProbe", "/readyz")):
        g = c.get(probe, {}).get("httpGet")
        if not g:
            problem("statefulset: no %s httpGet" % probe)
            continue
        p = ports.get(g["port"], g["port"])
        if g.get("path") != path or str(p) != port or \
                g.get("scheme", "HTTP") != scheme:
            problem("statefulset: %s asks %s %s:%s, want %s %s:%s" %
                    (probe, g.get("scheme", "HTTP"), g.get("path"), p,
                     scheme, path, port))
    ok("probes: /healthz (liveness), /readyz (readiness) on %s port %s" %
       (scheme, port))
    # the grace period outlasts the drain (gateway.deadline + 10 s)
    if dump:
        drain = duration_s(dump["gateway.deadline"]) + 10
        if pod.get("terminationGracePeriodSeconds", 30) <= drain:
            problem("terminationGracePeriodSeconds %s <= the drain %d s" %
                    (pod.get("terminationGracePeriodSeconds", 30), drain))
    # the pods' labels, the Services, the PDB
    labels = sts["spec"]["template"]["metadata"]["labels"]
    for kind, name in (("Service", "chargeonce"),
                       ("Service", "chargeonce-headless"),
                       ("PodDisruptionBudget", "chargeonce")):
        spec = docs[(kind, name)]["spec"]
        sel = spec["selector"].get("matchLabels", spec["selector"])
        if any(labels.get(k) != v for k, v in sel.items()):
            problem("%s %s selects %r, not the pods %r" %
                    (kind, name, sel, labels))
        for sp in spec.get("ports", []):
            if sp.get("targetPort") not in ports and \
                    sp.get("targetPort") not in ports.values():
                problem("%s %s: targetPort %s is no container port" %
                        (kind, name, sp.get("targetPort")))
    if docs[("Service", "chargeonce-headless")]["spec"].get("clusterIP") != \
            "None" or sts["spec"]["serviceName"] != "chargeonce-headless":
        problem("the StatefulSet's serviceName is not the headless Service")
    # the migrate Job: same configuration, every secret file mounted
    job = docs[("Job", "chargeonce-migrate-1-0-0")]["spec"]["template"]
    jc = job["spec"]["containers"][0]
    jfiles = mounted_files(docs, job["spec"], jc)
    jargs = jc.get("args", [])
    if jargs[-1:] != ["migrate"] or "--config" not in jargs or \
            jfiles.get(jargs[jargs.index("--config") + 1]) != \
            ("ConfigMap", "chargeonce-config", "chargeonce.conf"):
        problem("migrate Job: args %r, or its --config is not the "
                "ConfigMap's" % jargs)
    for k, v in entries.items():
        # http.tls_*: read only by the commands that serve HTTP
        if k.endswith("_file") and not k.startswith("http.tls_") and \
                v not in jfiles:
            problem("migrate Job: %s = %s is not mounted (the binary reads "
                    "it at start)" % (k, v))
    if job["spec"].get("restartPolicy") not in ("OnFailure", "Never"):
        problem("migrate Job: restartPolicy %r" % job["spec"].get(
            "restartPolicy"))
    ok("StatefulSet, Services, PodDisruptionBudget and migrate Job agree "
       "with the configuration and the Secrets")


def check_live(binary):
    """A running chargeonce answers the probes' paths and /metrics."""
    whsec = "whsec_" + base64.b64encode(b"w" * 32).decode()
    p = subprocess.Popen(
        [binary, "-X", "http.listen=127.0.0.1:0", "-X",
         "webhook.secret=" + whsec, "-X",
         "db.conninfo=host=127.0.0.1 port=1 connect_timeout=2", "webhook"],
        stderr=subprocess.PIPE, text=True)
    port = None
    try:
        t0 = time.time()
        while time.time() - t0 < 20 and port is None:
            line = p.stderr.readline()
            if not line:
                break
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
        if port is None:
            problem("chargeonce webhook never listened")
            return
        got = {}
        for path in ("/healthz", "/readyz", "/metrics"):
            try:
                r = urllib.request.urlopen(
                    "http://127.0.0.1:%d%s" % (port, path), timeout=10)
                got[path] = (r.status, r.read().decode())
            except urllib.error.HTTPError as e:
                got[path] = (e.code, e.read().decode())
        if got["/healthz"][0] != 200:
            problem("/healthz answers %d" % got["/healthz"][0])
        # no database here: /readyz exists and says so
        if got["/readyz"][0] != 503 or "database" not in got["/readyz"][1]:
            problem("/readyz answers %d %r" % got["/readyz"])
        text = got["/metrics"][1]
        for name in ("chargeonce_build_info{version=", "process_cpu_seconds_total",
                     "process_resident_memory_bytes", "process_open_fds",
                     "process_max_fds", "process_start_time_seconds",
                     "process_virtual_memory_bytes"):
            if "\n" + name not in text:
                problem("/metrics has no %s" % name)
        ok("a running chargeonce answers /healthz 200, /readyz 503 (no "
           "database), /metrics with build_info and process_*")
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def check_compose(binary, keys, root, tmp):
    path = os.path.join(root, "docker/compose.yaml")
    doc = yaml.safe_load(open(path))
    co = doc["services"]["chargeonce"]
    env = {k: str(v) for k, v in co.get("environment", {}).items()}
    if env.get("CHARGEONCE_HTTP_LISTEN") != "0.0.0.0:9108":
        problem("compose: chargeonce's CHARGEONCE_HTTP_LISTEN is %r, not "
                "0.0.0.0:9108 (probes and /metrics would not reach it)" %
                env.get("CHARGEONCE_HTTP_LISTEN"))
    if not any(str(p).endswith(":9108") for p in co.get("ports", [])):
        problem("compose: port 9108 not published")
    hc = co.get("healthcheck", {}).get("test", [])
    hcs = " ".join(hc) if isinstance(hc, list) else str(hc)
    if "127.0.0.1:9108/readyz" not in hcs and \
            "127.0.0.1:9108/healthz" not in hcs:
        problem("compose: no healthcheck on /readyz or /healthz: %r" % hcs)
    tool = hc[1] if isinstance(hc, list) and hc[:1] == ["CMD"] else None
    dockerfile = open(os.path.join(root, "docker/Dockerfile")).read()
    runtime = dockerfile.rsplit("FROM ", 1)[-1]
    if tool and not re.search(r"\b%s\b" % re.escape(tool), runtime):
        problem("compose: the healthcheck runs %s, which the image's runtime "
                "stage does not install" % tool)
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    e.update(env)
    r = run([binary, "--dump-config"], env=e)
    if r.returncode != 0:
        problem("compose: the binary refuses chargeonce's environment: %s" %
                r.stderr.strip())
    elif "names no configuration key" in r.stderr:
        problem("compose: a CHARGEONCE_* variable names no key: %s" %
                r.stderr)
    elif "http.listen = 0.0.0.0:9108" not in r.stdout:
        problem("compose: the binary does not read http.listen from it")
    ok("compose: chargeonce on 0.0.0.0:9108 (development mode), "
       "healthcheck %s" % hcs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--kubernetes-validate", dest="kv")
    ap.add_argument("--promtool")
    a = ap.parse_args()
    a.kv = a.kv or find_tool("kubernetes-validate")
    a.promtool = a.promtool or find_tool("promtool")
    for tool, what in ((a.kv, "kubernetes-validate (scripts/install-deps.sh "
                        "installs it from scripts/requirements-tools.txt)"),
                       (a.promtool, "promtool (Debian: prometheus)")):
        if not tool or not (os.path.isfile(tool) or shutil.which(tool)):
            problem("%s is missing" % what)
    if problems:
        return 1
    keys = help_keys(a.bin)
    tmp = tempfile.mkdtemp(prefix="co-manifests-")
    try:
        validate(a.kv, os.path.join(a.root, "deploy/kubernetes"))
        promtool(a.promtool, a.root)
        check_kubernetes(a.bin, keys, a.root, tmp)
        check_live(a.bin)
        check_compose(a.bin, keys, a.root, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
