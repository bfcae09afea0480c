"""deploy/edge validated offline: every manifest parses, built-in kinds pass the Kubernetes
schemas (kubernetes-validate, strict: unknown fields fail), KEDA's ScaledObject passes a
minimal schema of its own, the gateway's Envoy config routes with outlier ejection, and the
values agree with the example plan that `sori edge plan` simulates."""

from __future__ import annotations

import math
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from sori.edge_tools.plan_config import EXAMPLE_PLAN, load_plan

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "edge"
K8S_VERSION = "1.30.0"


def documents() -> list[dict]:
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    return docs


def find(kind: str, name: str) -> dict:
    return next(d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name)


def test_every_manifest_is_listed_and_named():
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    files = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(listed["resources"]) == files
    for doc in documents():
        assert {"apiVersion", "kind", "metadata"} <= doc.keys()
        assert doc["metadata"]["name"]
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "sori-edge"


@pytest.mark.parametrize(
    "doc",
    [d for d in documents() if not d["apiVersion"].startswith("keda.sh/")],
    ids=lambda d: f"{d['kind']}/{d['metadata']['name']}",
)
def test_builtin_kinds_pass_the_kubernetes_schema(doc):
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_schema_check_catches_a_broken_manifest():
    broken = find("Deployment", "vllm-local")
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = [1]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_vllm_serves_the_model_as_local_with_thinking_off_on_a_gpu():
    pod = find("Deployment", "vllm-local")["spec"]["template"]
    (vllm,) = pod["spec"]["containers"]
    args = vllm["args"]
    assert args[0] == "Qwen/Qwen3.6-35B-A3B"
    flag = {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--")}
    assert flag["--served-model-name"] == "local"
    assert flag["--default-chat-template-kwargs"] == '{"enable_thinking": false}'
    assert int(flag["--max-num-seqs"]) == load_plan(EXAMPLE_PLAN).max_num_seqs
    assert vllm["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert vllm["readinessProbe"]["httpGet"]["path"] == "/health"
    notes = pod["metadata"]["annotations"]
    assert notes["prometheus.io/scrape"] == "true" and notes["prometheus.io/path"] == "/metrics"
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    claim = volumes["weights"]["persistentVolumeClaim"]["claimName"]
    assert find("PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteMany"]


SCALED_OBJECT = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "spec": {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "additionalProperties": False,
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": {"type": "string"},
                    },
                    "additionalProperties": False,
                },
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "advanced": {"type": "object"},
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "properties": {
                            "type": {"enum": ["prometheus", "cron"]},
                            "name": {"type": "string"},
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                            "metadata": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                        },
                        "additionalProperties": False,
                    },
                },
            },
        },
    },
}
REQUIRED_METADATA = {
    "prometheus": {"serverAddress", "query", "threshold"},
    "cron": {"timezone", "start", "end", "desiredReplicas"},
}


def test_keda_scales_on_vllm_queue_metrics_and_prewarms_before_the_peaks():
    scaled = find("ScaledObject", "vllm-local")
    jsonschema.validate(scaled, SCALED_OBJECT)
    spec = scaled["spec"]
    assert spec["scaleTargetRef"]["name"] == "vllm-local"
    find("Deployment", spec["scaleTargetRef"]["name"])  # the target exists
    for trigger in spec["triggers"]:
        assert REQUIRED_METADATA[trigger["type"]] <= trigger["metadata"].keys()
    prometheus = {t["name"]: t["metadata"] for t in spec["triggers"] if t["type"] == "prometheus"}
    assert "vllm:num_requests_waiting" in prometheus["waiting"]["query"]
    assert "vllm:num_requests_running" in prometheus["running"]["query"]
    # The same numbers the example plan simulates.
    plan = load_plan(EXAMPLE_PLAN)
    assert float(prometheus["waiting"]["threshold"]) == plan.target_waiting_per_instance
    assert float(prometheus["running"]["threshold"]) == plan.target_running_per_instance
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (
        plan.min_instances,
        plan.max_instances,
    )
    crons = [t["metadata"] for t in spec["triggers"] if t["type"] == "cron"]
    windows = []
    for cron in crons:
        start_min, start_hour = (int(x) for x in cron["start"].split()[:2])
        end_min, end_hour = (int(x) for x in cron["end"].split()[:2])
        windows.append(
            (start_hour + start_min / 60, end_hour + end_min / 60, int(cron["desiredReplicas"]))
        )
    simulated = [(w.from_hour, w.to_hour, w.instances) for w in plan.prewarm]
    assert all(
        math.isclose(a, b)
        for x, y in zip(windows, simulated, strict=True)
        for a, b in zip(x, y, strict=True)
    )


def test_the_gateway_balances_on_load_and_ejects_slow_or_failing_instances():
    config = yaml.safe_load(find("ConfigMap", "edge-gateway")["data"]["envoy.yaml"])
    (cluster,) = config["static_resources"]["clusters"]
    assert cluster["lb_policy"] == "LEAST_REQUEST"
    assert cluster["health_checks"][0]["http_health_check"]["path"] == "/health"
    outlier = cluster["outlier_detection"]
    assert outlier["consecutive_gateway_failure"] >= 1 and outlier["max_ejection_percent"] <= 50
    address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    host = address["address"]["socket_address"]["address"]
    service = find("Service", host.split(".")[0])
    assert service["spec"]["clusterIP"] == "None"  # per-pod endpoints for per-pod ejection
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    (route,) = manager["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
    assert route["route"]["cluster"] == cluster["name"]
    assert route["route"]["timeout"] == "0s"  # streams are not cut by a whole-answer timeout
    assert route["route"]["retry_policy"]["per_try_idle_timeout"] == "4s"
