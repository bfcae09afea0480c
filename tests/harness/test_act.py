"""`sori test --act`: heard utterances go on through a real daemon whose MQTT handler
publishes to a real mosquitto broker; `no_action` is judged on what it really did.

The clip is real read speech (no command); a sentence pack written for the test maps
what the recognizer hears in it to "turn on the living-room light", so a real action
follows from real audio."""

from __future__ import annotations

import json
import subprocess
import sys

from broker import mosquitto, subscriber  # noqa: F401
from daemon_kit import HOME_TOML

HEARD = "그는 디비전이 피하면서 기흥 옆으로 걸어갔다"  # what vosk hears in the clip


def test_act_turns_the_light_on_through_the_broker(tmp_path, shared_dir, mosquitto, subscriber):  # noqa: F811
    (tmp_path / "story.yaml").write_text(
        "language: ko\nintents:\n  HassTurnOn:\n    data:\n      - sentences:\n"
        f'          - "{HEARD}"\n        slots:\n          name: 거실 조명\n',
        encoding="utf-8",
    )
    config = (
        HOME_TOML.replace("[intents]\n", f'[intents]\npacks = ["{tmp_path / "story.yaml"}"]\n')
        + f'\n[mqtt]\nurl = "{mosquitto}"\n[stt]\nwarm_up_s = 0\n[stt.vosk]\nmode = "free"\n'
    )
    (tmp_path / "sori.toml").write_text(config, encoding="utf-8")
    clip = shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"
    (tmp_path / "m.yaml").write_text(
        f"""defaults: {{config: sori.toml}}
fixtures:
  - name: light_on
    audio: {clip}
    expect: {{intent: HassTurnOn, slots: {{name: 거실 조명}}, tier: preset}}
  - name: must_not_act
    audio: {clip}
    expect: {{no_action: true}}
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "sori", "test", str(tmp_path / "m.yaml"), "--act",
         "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "1 passed, 1 failed"
    report = json.loads((tmp_path / "r.json").read_text("utf-8"))
    light_on, must_not_act = report["runs"]
    assert light_on["passed"] and report["act"]
    (utterance,) = light_on["utterances"]
    assert utterance["tier"] == "preset"
    assert [(a["handler"], a["target"], a["ok"]) for a in utterance["actions"]] == [
        ("mqtt", "light.living_room", True)
    ]
    assert must_not_act["false_actions"] == 1
    assert must_not_act["failures"][0].startswith("no action expected, but committed HassTurnOn")
    # both runs really reached the broker
    assert [subscriber.next() for _ in range(2)] == [("sori/light/living_room/set", "ON")] * 2
