"""Home Assistant's conversation agent as a tier, through HA itself: a sentence no preset
of Sori's knows goes (after the local model) to HA's /api/conversation/process; HA's own
agent carries it out (a custom sentence of configuration.yaml, an intent_script turning
input_boolean.night_mode on) and Sori speaks HA's answer."""

from __future__ import annotations

from ha_kit import wait_for
from sori_daemon import daemon_config, running


def test_what_no_preset_knows_goes_to_ha_and_sori_speaks_its_answer(real_ha, home, tmp_path):
    real_ha.call("input_boolean", "turn_off", entity_id="input_boolean.night_mode")
    wait_for(lambda: real_ha.state("input_boolean.night_mode") == "off")
    section = f'[home]\nsource = "home_assistant"\narea = "{home["area"]}"\n'
    config = daemon_config(tmp_path, real_ha.url, section)  # thinking on: the tiers
    with running(config, real_ha.token) as sori:
        turn = sori.say("야간 모드 켜 줘")
        assert turn["intent"] is None and turn["tier"] == "home_assistant", turn
        assert turn["response"].endswith("야간 모드를 켰어요"), turn
        assert turn["error"] == ""
        assert real_ha.state("input_boolean.night_mode") == "on"
        # a preset command beside it stays local: acted on by the handler, not the agent
        turn = sori.say("거실 불 꺼줘")
        assert turn["tier"] == "preset" and turn["actions"][0]["ok"] is True
    log = (tmp_path / "run.log").read_text()
    assert "Home Assistant understood it" in log
