"""The module map's floors, by folder: a module imports only from its own floor or below,
and the package has no import circles."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "device" / "sori"

# Floor of each folder or module of `sori`, by dotted path under the package; a module
# takes the floor of its longest listed prefix (see STYLE.md's module map). A stage folder
# sits on the floor of its lowest room, so a module added to it starts at the bottom.
FLOORS = {
    "core": 0,
    "hearing": 1,
    "understanding": 2,
    "acting": 1,
    "provisioning": 1,
    "serving": 3,
    "testing": 3,
    "core.metrics": 3,
    "core.logs": 4,
    "hearing.audio": 1,
    "hearing.vad": 1,
    "hearing.stt": 2,
    "hearing.wake": 2,
    "hearing.pipeline": 3,
    "hearing.committing": 3,
    "hearing.wake_gate": 3,
    "hearing.pacing": 3,
    "understanding.intents": 2,
    "understanding.multi_command": 3,
    "understanding.answering": 3,
    "thinking": 2,
    "speaking": 2,
    "speaking.playback": 3,
    "acting.mqtt_connection": 1,
    "acting.ha_rest": 1,
    "acting.actions": 2,
    "acting.state": 2,
    "provisioning.board": 1,
    "provisioning.models": 1,
    "provisioning.ha_import": 2,
    "provisioning.bundle": 4,
    "provisioning.doctor": 4,
    "serving.conversation": 3,
    "serving.daemon": 4,
    "serving.http_api": 4,
    "serving.api_access": 4,
    "serving.wyoming_server": 4,
    "testing.fakes": 3,
    "testing.conformance": 3,
    "testing.replaying": 4,
    "testing.harness": 4,
    "assemble": 4,
    "edge_tools": 4,
    "cli": 5,
    "commands": 5,
    "__main__": 5,
    "__init__": 5,
}
# The floor-2 stages talk through events only; they never import each other.
STAGES = {
    "hearing.stt",
    "hearing.wake",
    "understanding.intents",
    "thinking",
    "speaking",
    "acting.actions",
    "acting.state",
    "provisioning.ha_import",
}
MAX_LOOSE_MODULES = 10
"""Modules that may sit loose at the top of the package; the rest live in stage folders."""


def _dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _room(dotted: str) -> str:
    """The longest prefix of `dotted` that FLOORS lists."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in FLOORS:
            return prefix
    return dotted


def _modules() -> dict[str, Path]:
    return {_dotted(p): p for p in PACKAGE.rglob("*.py")}


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """The `sori` modules `path` imports, by dotted name under the package: for `from a
    import b` the submodule `a.b` when there is one, else `a`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sori"):
            base = node.module.removeprefix("sori").removeprefix(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}".lstrip(".")
                found.add(sub if sub in MODULES else base or "__init__")
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("sori.") for a in node.names if a.name.startswith("sori.")
            )
    return found


def _imports(path: Path) -> set[str]:
    return {_room(name) for name in _imported(path) if _room(name) in FLOORS}


def test_every_module_has_a_floor():
    unknown = sorted(m for m in MODULES if _room(m) not in FLOORS)
    assert not unknown, f"add these to FLOORS: {unknown}"


def test_no_module_imports_a_higher_floor_or_a_sibling_stage():
    broken = []
    for module, path in MODULES.items():
        here = _room(module)
        for target in _imports(path):
            if target == here or target == "__init__":
                continue
            if FLOORS[target] > FLOORS[here]:
                broken.append(f"{module} (floor {FLOORS[here]}) → {target}")
            elif here in STAGES and target in STAGES:
                broken.append(f"{module}: stage imports stage {target}")
    assert not broken, "\n".join(broken)


def test_at_most_a_handful_of_modules_sit_loose_at_the_top():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, loose


def test_no_import_circles():
    graph = {
        module: {m for m in _imported(path) if m in MODULES and m != module}
        for module, path in MODULES.items()
    }
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    for start in graph:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                circles.append(" → ".join(path[path.index(child) :] + [child]))
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph[child]))))
    assert not circles, "\n".join(circles)
