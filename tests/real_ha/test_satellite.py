"""Sori as Home Assistant's voice satellite, with HA itself: a daemon with `[wyoming]
satellite = true` (built in this process, as `sori run` builds it, so the clip is heard only
once HA runs the satellite) is added through HA's Wyoming config flow; HA sends
run-satellite; a sentence no preset knows is handed to HA's Assist pipeline, whose
speech-to-text and voice are Sori's; HA's own agent carries it out (input_text.heard gets
the words) and HA's spoken answer plays through Sori's output."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import wave

import numpy as np
from ha_kit import MARKS, wait_for

CLIP = "picovoice_leopard_test_ko.wav"  # "그는 디비전이 ...": no preset of Sori's matches
CONFIG = """
[home]
area = "living_room"
areas = [{ id = "living_room", name = "거실" }]

[tts]
backend = "espeak"

[stt]
warm_up_s = 0.0

[audio]
denoise = "off"

[wake]
enabled = false

[daemon]
log_format = "text"
thinking = false

[wyoming]
enabled = true
uri = "tcp://127.0.0.1:0"
zeroconf = false
satellite = true
name = "sori-satellite"
"""


def test_ha_runs_its_pipeline_on_what_sori_hands_over_and_sori_speaks_the_answer(
    real_ha, shared_dir, tmp_path, caplog
):
    from sori.assemble.daemon import build_daemon
    from sori.assemble.hearing import hearing_recognizer, open_hearing
    from sori.assemble.understanding import home_from_config
    from sori.core.config import load_config
    from sori.core.events import TurnFinished
    from sori.serving.wyoming_server import WyomingServer, serve_beside
    from sori.serving.wyoming_server.satellite import attach_satellite

    caplog.set_level(logging.INFO)
    real_ha.call("input_text", "set_value", entity_id="input_text.heard", value="-")
    clip = shared_dir / "audio" / "ko-read" / CLIP
    path = tmp_path / "sori.toml"
    path.write_text(CONFIG, encoding="utf-8")
    config = load_config(str(path))
    home = home_from_config(config.home)
    out = tmp_path / "out.wav"

    async def main() -> dict:
        daemon = await asyncio.to_thread(
            build_daemon, config, home, str(out), lambda: (config, home),
            warm_presets=False, input_name=str(clip), no_wake=True,
        )  # fmt: skip
        daemon.start()
        events = daemon.subscribe(1024)
        recognizer = await asyncio.to_thread(hearing_recognizer, config, daemon.understanding)
        link = attach_satellite(config, daemon, "sori-satellite")
        voice = daemon.player.cache.voice
        server = await serve_beside(config, home, daemon.understanding, voice, recognizer, link)
        # HA 2024.3 takes no speech-to-text or voice from a satellite's own entry: the
        # same models (and locks) on a second address, added as a plain Wyoming service
        plain = WyomingServer(
            dataclasses.replace(server.services, satellite=None, locks=server.services.locks),
            "tcp://127.0.0.1:0",
        )
        await plain.start()
        found: dict = {}
        try:
            made = await asyncio.to_thread(
                real_ha.add_integration, "wyoming", {"host": "127.0.0.1", "port": plain.port}
            )
            entities = await asyncio.to_thread(real_ha.ws, {"type": "config/entity_registry/list"})
            mine = {e["entity_id"] for e in entities if e["config_entry_id"] == made["entry_id"]}
            found["entities"] = mine
            satellite = await asyncio.to_thread(
                real_ha.add_integration, "wyoming", {"host": "127.0.0.1", "port": server.port}
            )
            found["satellite"] = satellite["title"]
            (stt,) = [e for e in mine if e.startswith("stt.")]
            (tts,) = [e for e in mine if e.startswith("tts.")]
            pipeline = {
                "type": "assist_pipeline/pipeline/create", "name": "Sori satellite",
                "language": "ko", "conversation_engine": "homeassistant",
                "conversation_language": "ko", "stt_engine": stt, "stt_language": "ko",
                "tts_engine": tts, "tts_language": "ko", "tts_voice": None,
                "wake_word_entity": None, "wake_word_id": None,
            }  # fmt: skip
            made_pipeline = await asyncio.to_thread(real_ha.ws, pipeline)
            await asyncio.to_thread(
                real_ha.ws,
                {"type": "assist_pipeline/pipeline/set_preferred",
                 "pipeline_id": made_pipeline["id"]},
            )  # fmt: skip
            for _ in range(600):  # HA connects and sends run-satellite
                if link.running:
                    break
                await asyncio.sleep(0.05)
            found["running"] = link.running
            source, heard = await asyncio.to_thread(
                open_hearing, str(clip), config, daemon.understanding, daemon.clock,
                daemon.conversation, recognizer, link.tap,
            )  # fmt: skip
            await daemon.listen(heard)
            for _ in range(1200):  # HA's answer played, and `played` sent
                if "played Home Assistant's reply" in caplog.text:
                    break
                await asyncio.sleep(0.05)
            found["played"] = "played Home Assistant's reply" in caplog.text
            source.close()
            seen = []
            while not events.empty():
                seen.append(events.get_nowait())
            found["turns"] = [e for e in seen if e["type"] == TurnFinished.__name__]
            found["handed_over"] = link.handed_over
        finally:
            await server.close()
            await plain.close()
            await daemon.close(5)
        return found

    found = asyncio.run(main())
    assert {e.split(".")[0] for e in found["entities"]} >= {"stt", "tts"}
    assert found["running"], "Home Assistant never sent run-satellite"
    assert found["handed_over"] == 1, json.dumps(found["turns"], ensure_ascii=False)
    assert found["played"], caplog.text[-3000:]
    heard = wait_for(lambda: (v := real_ha.state("input_text.heard")) != "-" and v, 30)
    # HA's pipeline heard the utterance through Sori's speech-to-text ("그 는 디비전 이 피
    # 하면서 ..."); its agent matched "그 는 {heard}" and set the rest
    (transcript,) = re.findall(r"satellite: Home Assistant heard '([^']*)'", caplog.text)
    assert transcript.startswith("그 는 ") and not MARKS.search(transcript), transcript
    assert heard == transcript.removeprefix("그 는 ") and len(heard.split()) >= 4, heard
    assert "satellite: Home Assistant answers '들었어요'" in caplog.text
    with wave.open(str(out)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(float)
        seconds = len(x) / w.getframerate()
    assert seconds > 0.4 and np.sqrt(np.mean(x**2)) > 100, seconds  # "들었어요"
