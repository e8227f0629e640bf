#!/usr/bin/env python3
"""k8s_manifests_test.py — deploy/kubernetes/ checked offline (issue 39).

usage: k8s_manifests_test.py DEPLOY_DIR [SPILLWAY MODEL]

Needs PyYAML, jsonschema and kubernetes-validate (PyPI, pinned in
scripts/test.sh, installed into $SW_TEST_PYDEPS, default
~/.cache/spillway/test-pydeps); exits 77 (CTest: skipped) without them.

What is validated, and against what:
- Deployment and Service: kubernetes-validate's bundled Kubernetes OpenAPI
  JSON schemas (no network), strict (an unknown field fails), for the
  oldest Kubernetes the manifests need (1.30: the preStop `sleep` action)
  and the newest the package knows.
- InferencePool (inference.networking.k8s.io/v1), InferenceObjective
  (llm-d.ai/v1alpha2) and HTTPRoute (gateway.networking.k8s.io/v1): these
  are CRDs, whose schemas kubernetes-validate does not hold and that cannot
  be fetched here. They are checked against the small JSON schemas below,
  written for this test from the fields, types, bounds and required lists
  of the CRDs (gateway-api-inference-extension v1.6.0's
  config/crd/bases/inference.networking.k8s.io_inferencepools.yaml,
  llm-d-router's config/crd/bases/llm-d.ai_inferenceobjectives.yaml): a
  subset, not the upstream schemas; the CRDs' CEL rules (x-kubernetes-
  validations) are checked by hand where they apply (unique target ports,
  a port for a Service picker). HTTPRoute is only checked for the fields
  used here.
- Across files: the pool and the Service select the Deployment's pods, the
  pool's target port is the container's port and serve's --port, every
  probe asks /health on it, --drain-timeout plus the preStop sleep fits
  in terminationGracePeriodSeconds, --public-metrics is set (the picker
  scrapes without a key), kustomization.yaml lists the files.
- With SPILLWAY and MODEL: the container's args run (`-m MODEL`, a free
  port and the model's context in place of the file's), /health turns 200,
  /metrics answers without a key, and SIGTERM exits 0.
Not run: a real API server (kubectl --dry-run=server), the CRDs' full
schemas, the container image build (deploy/Dockerfile).
"""
import os
import sys

sys.path.insert(0, os.environ.get("SW_TEST_PYDEPS") or
                os.path.expanduser("~/.cache/spillway/test-pydeps"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402
from serve_util import check  # noqa: E402

try:
    import jsonschema
    import kubernetes_validate
    import yaml
except ImportError as e:
    print("k8s_manifests_test: %s (scripts/test.sh installs kubernetes-validate into "
          "~/.cache/spillway/test-pydeps); skipped" % e)
    sys.exit(77)

DIR = sys.argv[1]
BIN, MODEL = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else (None, None)
K8S_VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]

PORT = {"type": "object", "required": ["number"], "additionalProperties": False,
        "properties": {"number": {"type": "integer", "minimum": 1, "maximum": 65535}}}
NAME = {"type": "string", "minLength": 1, "maxLength": 253}
KIND = {"type": "string", "minLength": 1, "maxLength": 63,
        "pattern": "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"}
GROUP = {"type": "string", "maxLength": 253,
         "pattern": r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
META = {"type": "object", "required": ["name"], "properties": {"name": NAME}}
LABEL_VALUE = {"type": "string", "maxLength": 63,
               "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}


def top(api_version, kind, spec):
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "additionalProperties": False,
            "properties": {"apiVersion": {"const": api_version}, "kind": {"const": kind},
                           "metadata": META, "spec": spec}}


SCHEMAS = {
    ("inference.networking.k8s.io/v1", "InferencePool"): top(
        "inference.networking.k8s.io/v1", "InferencePool", {
            "type": "object", "required": ["selector", "targetPorts"],
            "additionalProperties": False,
            "properties": {
                "selector": {
                    "type": "object", "required": ["matchLabels"],
                    "additionalProperties": False,
                    "properties": {"matchLabels": {
                        "type": "object", "minProperties": 1, "maxProperties": 64,
                        "additionalProperties": LABEL_VALUE}}},
                "targetPorts": {"type": "array", "minItems": 1, "maxItems": 8, "items": PORT},
                "appProtocol": {"enum": ["http", "kubernetes.io/h2c"]},
                "endpointPickerRef": {
                    "type": "object", "required": ["name"], "additionalProperties": False,
                    "properties": {"name": NAME, "kind": KIND, "group": GROUP, "port": PORT,
                                   "failureMode": {"enum": ["FailOpen", "FailClose"]}}}}}),
    ("llm-d.ai/v1alpha2", "InferenceObjective"): top(
        "llm-d.ai/v1alpha2", "InferenceObjective", {
            "type": "object", "required": ["poolRef"], "additionalProperties": False,
            "properties": {
                "priority": {"type": "integer", "minimum": -2**31, "maximum": 2**31 - 1},
                "poolRef": {"type": "object", "required": ["name"],
                            "additionalProperties": False,
                            "properties": {"name": NAME, "kind": KIND, "group": GROUP}}}}),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): top(
        "gateway.networking.k8s.io/v1", "HTTPRoute", {
            "type": "object", "required": ["parentRefs", "rules"],
            "properties": {
                "parentRefs": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": NAME, "kind": KIND, "group": GROUP}}},
                "rules": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["backendRefs"],
                    "properties": {"backendRefs": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "required": ["name"],
                        "properties": {"name": NAME, "kind": KIND,
                                       "group": GROUP}}}}}}}}),
}


def load():
    docs = {}
    for fn in sorted(os.listdir(DIR)):
        if not fn.endswith(".yaml"):
            continue
        with open(os.path.join(DIR, fn)) as f:
            for d in yaml.safe_load_all(f):
                if d is not None:
                    docs.setdefault(d.get("kind"), []).append((fn, d))
    return docs


def validate(docs):
    for kind, items in docs.items():
        for fn, d in items:
            what = "%s: %s %s" % (fn, kind, d.get("metadata", {}).get("name"))
            if kind in ("Deployment", "Service"):
                for v in K8S_VERSIONS:
                    try:
                        kubernetes_validate.validate(d, v, strict=True)
                    except kubernetes_validate.ValidationError as e:
                        check(False, "%s against Kubernetes %s: %s" % (what, v, e.message))
            elif kind == "Kustomization":
                listed = set(d.get("resources", []))
                files = {fn for fn, _ in sum(docs.values(), [])
                         if fn not in ("kustomization.yaml", "inferenceobjective.yaml")}
                check(listed == files, "kustomization lists %s, the folder has %s" %
                      (sorted(listed), sorted(files)))
            else:
                schema = SCHEMAS.get((d.get("apiVersion"), kind))
                if not check(schema is not None, "%s: no schema for %s %s" %
                             (what, d.get("apiVersion"), kind)):
                    continue
                try:
                    jsonschema.validate(d, schema)
                except jsonschema.ValidationError as e:
                    check(False, "%s: %s at %s" % (what, e.message, list(e.absolute_path)))


def arg_after(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def cross_check(docs):
    (_, dep), = docs["Deployment"]
    (_, svc), = docs["Service"]
    (_, pool), = docs["InferencePool"]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the Deployment's selector does not match its pods")
    check(pool["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the InferencePool does not select the Deployment's pods")
    check(svc["spec"]["selector"].items() <= labels.items(),
          "the Service does not select the Deployment's pods")
    (c,) = pod["spec"]["containers"]
    args = c["args"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(args[0] == "serve", "the container does not run serve: %s" % args)
    check(arg_after(args, "--host") in ("0.0.0.0", "::"), "serve listens on loopback only")
    check(arg_after(args, "--port") == str(ports.get("http")),
          "serve's --port %s is not the container port %s" % (arg_after(args, "--port"),
                                                              ports.get("http")))
    targets = [p["number"] for p in pool["spec"]["targetPorts"]]
    check(len(set(targets)) == len(targets), "target ports not unique")  # the CRD's CEL rule
    check(targets == [ports.get("http")], "pool target ports %s, container port %s" %
          (targets, ports.get("http")))
    epp = pool["spec"].get("endpointPickerRef", {})
    check(epp.get("kind", "Service") != "Service" or "port" in epp,
          "a Service endpoint picker needs a port")  # the CRD's CEL rule
    check(svc["spec"]["ports"][0]["targetPort"] in ("http", ports.get("http")),
          "the Service does not target the http port")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        g = c.get(probe, {}).get("httpGet", {})
        check(g.get("path") == "/health" and g.get("port") in ("http", ports.get("http")),
              "%s is not GET /health on the http port: %s" % (probe, c.get(probe)))
    drain = arg_after(args, "--drain-timeout")
    pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    check(drain is not None and int(drain) > 0, "no --drain-timeout")
    check(drain is not None and pre + int(drain) < grace,
          "preStop %s s + drain %s s do not fit the grace period %s s" % (pre, drain, grace))
    live = c["livenessProbe"]
    check(live["periodSeconds"] * live["failureThreshold"] > int(drain or 0),
          "liveness would kill a draining pod (it answers 503 while draining)")
    check("--public-metrics" in args, "/metrics needs the key, which the picker cannot send")
    for _, obj in docs.get("InferenceObjective", []):
        check(obj["spec"]["poolRef"]["name"] == pool["metadata"]["name"],
              "the InferenceObjective names another pool")
    for _, route in docs.get("HTTPRoute", []):
        refs = [b for r in route["spec"]["rules"] for b in r["backendRefs"]]
        check(any(b.get("kind") == "InferencePool" and b["name"] == pool["metadata"]["name"]
                  for b in refs), "the HTTPRoute does not send to the pool")


def run_args(docs):
    """The Deployment's args, run against the tiny model."""
    import json
    import subprocess
    import urllib.error
    import urllib.request
    (_, dep), = docs["Deployment"]
    args = list(dep["spec"]["template"]["spec"]["containers"][0]["args"])
    port = serve_util.free_port()
    args[args.index("--port") + 1] = str(port)
    args[args.index("-c") + 1] = "256"  # the tiny model's context
    args[args.index("--host") + 1] = "127.0.0.1"
    proc = subprocess.Popen([BIN, *args, "-m", MODEL, "-t", "2"], stderr=subprocess.PIPE)

    def get(path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
    try:
        check(serve_util.wait_healthy(proc, lambda: get("/health"), 60, 0.1),
              "serve with the Deployment's args did not become ready")
        status, body = get("/metrics")
        check(status == 200 and b"vllm:num_requests_waiting" in body,
              "/metrics without a key: %d" % status)
        status, body = get("/v1/models")
        check(status == 200 and json.loads(body)["data"][0]["id"] ==
              args[args.index("--alias") + 1], "/v1/models: %d %s" % (status, body[:200]))
    finally:
        rc = serve_util.stop(proc)
        err = proc.stderr.read().decode("utf-8", "replace")
        check(rc == 0, "serve with the Deployment's args exited %d: %s" % (rc, err[-500:]))


def self_test():
    """The schemas and checks can fail: a broken pool and Deployment are caught."""
    bad_pool = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
                "metadata": {"name": "x"}, "spec": {"selector": {"matchLabels": {}},
                                                    "targetPorts": [{"number": 70000}]}}
    try:
        jsonschema.validate(bad_pool, SCHEMAS[("inference.networking.k8s.io/v1",
                                               "InferencePool")])
        check(False, "the InferencePool schema took an empty selector and port 70000")
    except jsonschema.ValidationError:
        pass
    bad_dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
               "spec": {"selector": {}, "template": {"spec": {"containers": [
                   {"name": "c", "image": "i", "readinessProbe": {"httpGet": {
                       "path": "/health", "port": "http", "bogus": 1}}}]}}}}
    try:
        kubernetes_validate.validate(bad_dep, K8S_VERSIONS[-1], strict=True)
        check(False, "kubernetes-validate took an unknown probe field")
    except kubernetes_validate.ValidationError:
        pass


if __name__ == "__main__":
    self_test()
    docs = load()
    for kind in ("Deployment", "Service", "InferencePool", "HTTPRoute", "InferenceObjective",
                 "Kustomization"):
        check(kind in docs, "deploy/kubernetes has no %s" % kind)
    validate(docs)
    if all(k in docs for k in ("Deployment", "Service", "InferencePool")):
        cross_check(docs)
        if BIN is not None:
            run_args(docs)
    print("k8s_manifests_test: validated against Kubernetes %s; %s" %
          (", ".join(K8S_VERSIONS), "ok" if serve_util.failures == 0 else
           "%d failures" % serve_util.failures))
    sys.exit(1 if serve_util.failures else 0)
