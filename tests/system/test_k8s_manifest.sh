#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# packaging/k8s/mercuryd-daemonset.yaml checked offline (no cluster, no kubectl here): every
# document parses and has apiVersion, kind and metadata.name; the DaemonSet's selector matches
# its pod labels; mercuryd runs with host networking, unprivileged, with exactly the
# capabilities it needs (BPF, PERFMON, NET_ADMIN, CHOWN; no SYS_ADMIN), the host's bpffs and
# cgroup mounted, its interfaces from a ConfigMap of this file, metrics on a declared port;
# every volume mounted exists and every volume is mounted.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
/usr/bin/python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml missing"; exit 77; }
exec /usr/bin/python3 - "$root/packaging/k8s/mercuryd-daemonset.yaml" <<'PY'
import sys, yaml
path = sys.argv[1]
fails = 0
def check(what, ok):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += 0 if ok else 1
docs = [d for d in yaml.safe_load_all(open(path)) if d]
for d in docs:
    check("%s/%s has apiVersion, kind, metadata.name" % (d.get("kind"), d.get("metadata", {}).get("name")),
          all(k in d for k in ("apiVersion", "kind", "metadata")) and "name" in d["metadata"])
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
ds = by_kind.get("DaemonSet", [None])[0]
check("one DaemonSet (apps/v1)", ds is not None and ds["apiVersion"] == "apps/v1")
if ds is None:
    sys.exit(1)
ns = ds["metadata"].get("namespace")
check("the namespace it lives in is declared (%s)" % ns,
      any(d["metadata"]["name"] == ns for d in by_kind.get("Namespace", [])))
spec, tpl = ds["spec"], ds["spec"]["template"]
sel = spec["selector"]["matchLabels"]
check("selector %s matches the pod labels" % sel,
      all(tpl["metadata"]["labels"].get(k) == v for k, v in sel.items()))
pod = tpl["spec"]
check("hostNetwork: the node's interfaces", pod.get("hostNetwork") is True)
check("dnsPolicy ClusterFirstWithHostNet (host networking)", pod.get("dnsPolicy") == "ClusterFirstWithHostNet")
ctrs = {c["name"]: c for c in pod["containers"]}
m = ctrs.get("mercuryd")
check("a mercuryd container with an image", m is not None and bool(m.get("image")))
sc = m.get("securityContext", {})
caps = sc.get("capabilities", {})
check("not privileged, no privilege escalation",
      sc.get("privileged") in (None, False) and sc.get("allowPrivilegeEscalation") is False)
check("capabilities: drop ALL", caps.get("drop") == ["ALL"])
check("capabilities: add exactly BPF, PERFMON, NET_ADMIN, CHOWN (%s)" % caps.get("add"),
      sorted(caps.get("add", [])) == sorted(["BPF", "PERFMON", "NET_ADMIN", "CHOWN"]))
check("no SYS_ADMIN anywhere", all("SYS_ADMIN" not in (c.get("securityContext", {}).get("capabilities", {}).get("add") or [])
                                   for c in pod["containers"]))
vols = {v["name"]: v for v in pod.get("volumes", [])}
mounts = {vm["mountPath"]: vm for vm in m.get("volumeMounts", [])}
def host(path):
    return [n for n, v in vols.items() if v.get("hostPath", {}).get("path") == path]
check("the host's bpffs at /sys/fs/bpf", host("/sys/fs/bpf") and mounts.get("/sys/fs/bpf", {}).get("name") in host("/sys/fs/bpf"))
check("the host's cgroup tree at /sys/fs/cgroup", host("/sys/fs/cgroup") and mounts.get("/sys/fs/cgroup", {}).get("name") in host("/sys/fs/cgroup"))
cm_names = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
cfg = mounts.get("/etc/mercury", {}).get("name")
cmref = vols.get(cfg, {}).get("configMap", {}).get("name")
check("/etc/mercury from a ConfigMap of this file (%s)" % cmref, cmref in cm_names)
if cmref in cm_names:
    ifaces = cm_names[cmref]["data"].get("interfaces", "")
    lines = [l for l in ifaces.splitlines() if l.strip() and not l.strip().startswith("#")]
    check("its interfaces: at least one line, each with an explicit --qdisc other than auto (%s)" % lines,
          lines and all("--qdisc" in l and "--qdisc auto" not in l and "--force" not in l for l in lines))
env = {e["name"]: e.get("value") for e in m.get("env", [])}
check("MERCURY_INTERFACES is the ConfigMap's file", env.get("MERCURY_INTERFACES") == "/etc/mercury/interfaces")
mdir = env.get("MERCURY_METRICS_DIR")
check("metrics: mercuryd writes them to a mounted volume (%s)" % mdir, mdir in mounts)
ports = [p for c in pod["containers"] for p in c.get("ports", [])]
ann = tpl["metadata"].get("annotations", {})
check("metrics: a declared port, the one the scrape annotation names",
      ports and str(ports[0]["containerPort"]) == ann.get("prometheus.io/port"))
exp = [c for c in pod["containers"] if any(p["containerPort"] == ports[0]["containerPort"] for p in c.get("ports", []))]
check("... served from the volume mercuryd writes", exp and any(
    vm["name"] == mounts[mdir]["name"] for vm in exp[0].get("volumeMounts", [])) if mdir in mounts else False)
used = {vm["name"] for c in pod["containers"] for vm in c.get("volumeMounts", [])}
check("every mount names a volume and every volume is mounted", used == set(vols))
check("a grace period for detach --all (>= 10 s)", pod.get("terminationGracePeriodSeconds", 30) >= 10)
print("all checks passed" if fails == 0 else "%d check(s) failed" % fails)
sys.exit(1 if fails else 0)
PY
