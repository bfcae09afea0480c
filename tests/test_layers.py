"""The module map's floors: a module imports only from its own floor or below."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "device" / "sori"

# Floor of each top-level module or subpackage of `sori` (see STYLE.md's module map).
FLOORS = {
    "errors": 0,
    "events": 0,
    "clock": 0,
    "config": 0,
    "home": 0,
    "intent_kinds": 0,
    "hangul": 0,
    "board": 1,
    "redact": 0,
    "files": 0,
    "shipped": 0,
    "audio": 1,
    "ha_rest": 1,
    "mqtt_connection": 1,
    "models": 1,
    "bundle": 4,
    "vad": 1,
    "stt": 2,
    "intents": 2,
    "llm": 2,
    "tts": 2,
    "actions": 2,
    "state": 2,
    "wake": 2,
    "ha_import": 2,
    "pipeline": 3,
    "committing": 3,
    "testing": 3,
    "conformance": 3,
    "playback": 3,
    "metrics": 3,
    "answering": 3,
    "multi_command": 3,
    "conversation": 3,
    "wake_gate": 3,
    "pacing": 3,
    "daemon": 4,
    "assemble": 4,
    "replaying": 4,
    "doctor": 4,
    "harness": 4,
    "http_api": 4,
    "api_access": 4,
    "logs": 4,
    "wyoming_server": 4,
    "edge_tools": 4,
    "cli": 5,
    "commands": 5,
    "__main__": 5,
    "__init__": 5,
}
# Floor-2 stages talk through events only; they never import each other.
STAGES = {"stt", "intents", "llm", "tts", "actions", "state", "wake", "ha_import"}


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sori."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("sori."))
    return found


def test_every_module_has_a_floor():
    unknown = {_part(p) for p in PACKAGE.rglob("*.py")} - FLOORS.keys()
    assert not unknown, f"add these to FLOORS: {sorted(unknown)}"


def test_no_module_imports_a_higher_floor_or_a_sibling_stage():
    broken = []
    for path in PACKAGE.rglob("*.py"):
        here = _part(path)
        for target in _imports(path):
            if target == here:
                continue
            if FLOORS[target] > FLOORS[here]:
                broken.append(f"{path.relative_to(PACKAGE)} (floor {FLOORS[here]}) → {target}")
            elif here in STAGES and target in STAGES:
                broken.append(f"{path.relative_to(PACKAGE)}: stage imports stage {target}")
    assert not broken, "\n".join(broken)
