"""`sori test` end to end: real recordings through the real hearing pipeline (vosk),
reports read back, a browser renders the page, a baseline catches a regression, and two
workers give what one gives.

The manifest's intent comes from a sentence pack written for the test: its sentence is
what the recognizer hears in the clip (it is no command), so the preset tier commits it
with a real latency on clean audio; under white noise at 20 dB the recognizer hears a
different sentence and the expectation fails, which gives the reports a failure to show.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sori.testing.harness.manifest import Tolerances
from sori.testing.harness.summary import compare

pytestmark = pytest.mark.slow

LEOPARD = "picovoice_leopard_test_ko.wav"
HEARD = "그는 디비전이 피하면서 기흥 옆으로 걸어갔다"  # what vosk hears in the clip


def sori(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", "test", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def manifest(tmp_path_factory, shared_dir) -> Path:
    folder = tmp_path_factory.mktemp("harness")
    (folder / "story.yaml").write_text(
        f"language: ko\nintents:\n  ReadStory:\n    data:\n      - sentences:\n"
        f'          - "{HEARD}"\n',
        encoding="utf-8",
    )
    (folder / "sori.toml").write_text(
        # one decoding pass, no warm-up: the test measures the harness, not the recognizer
        f'[intents]\npacks = ["{folder / "story.yaml"}"]\n'
        '[stt]\nwarm_up_s = 0\n[stt.vosk]\nmode = "free"\n',
        encoding="utf-8",
    )
    clip = shared_dir / "audio" / "ko-read" / LEOPARD
    (folder / "m.yaml").write_text(
        f"""defaults:
  config: sori.toml
  home: {shared_dir / "conformance" / "ha-intents-ko" / "_fixtures.yaml"}
  max_commit_ms: 60000  # latency depends on the load of the machine; not judged here
fixtures:
  - audio: {clip}
    expect: {{intent: ReadStory, tier: preset}}
  - name: twice
    audio: [{clip}, {clip}]
    expect: [{{intent: ReadStory}}, {{intent: ReadStory}}]
augment:
  - {{noise: white, snr_db: 20}}
tolerances: {{accuracy_drop: 0.0, p95_commit_ms_rise: 50}}
""",
        encoding="utf-8",
    )
    return folder / "m.yaml"


@pytest.fixture(scope="module")
def one_job(manifest) -> tuple[subprocess.CompletedProcess, Path]:
    out = manifest.parent / "jobs1"
    out.mkdir()
    done = sori(
        str(manifest),
        "--jobs",
        "1",
        "--json",
        str(out / "r.json"),
        "--junit",
        str(out / "r.xml"),
        "--report",
        str(out / "page"),
    )
    return done, out


@pytest.fixture(scope="module")
def two_jobs(manifest, one_job) -> tuple[subprocess.CompletedProcess, Path]:
    """The same manifest on two workers, against a baseline in which every run passed and
    commits came 5 s sooner: an injected regression of both accuracy and latency. The shift
    is far beyond what the load of the machine moves a p95 between two runs (CI saw 200 ms
    drowned by a slow first run)."""
    out = manifest.parent / "jobs2"
    out.mkdir()
    better = copy.deepcopy(json.loads((one_job[1] / "r.json").read_text("utf-8")))
    for run in better["runs"]:
        run["passed"], run["failures"] = True, []
    for figures in [better["summary"], *better["summary"]["by_augmentation"].values()]:
        figures["accuracy"] = 1.0
        if figures["p95_commit_ms"] is not None:
            figures["p95_commit_ms"] -= 5000
    (out / "baseline.json").write_text(json.dumps(better), "utf-8")
    done = sori(
        str(manifest),
        "--jobs",
        "2",
        "--json",
        str(out / "r.json"),
        "--baseline",
        str(out / "baseline.json"),
    )
    return done, out


def test_clean_passes_noise_fails_with_one_line_each_and_a_count(one_job):
    done, out = one_job
    assert done.returncode == 1, done.stderr
    report = json.loads((out / "r.json").read_text("utf-8"))
    failed = [r for r in report["runs"] if not r["passed"]]
    assert failed and all(r["augmentation"] == "white 20 dB" for r in failed)
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == f"{4 - len(failed)} passed, {len(failed)} failed"
    failures = [line for line in lines if line.startswith("FAIL ")]
    assert len(failures) == sum(len(r["failures"]) for r in failed)
    assert all("[white 20 dB]" in line for line in failures)
    assert "Traceback" not in done.stderr


def test_the_json_report_holds_every_run_utterance_and_timing(one_job):
    report = json.loads((one_job[1] / "r.json").read_text("utf-8"))
    runs = {(r["fixture"], r["augmentation"]): r for r in report["runs"]}
    assert set(runs) == {
        (f, a) for f in ("picovoice_leopard_test_ko", "twice") for a in ("clean", "white 20 dB")
    }
    clean = runs["picovoice_leopard_test_ko", "clean"]
    (utterance,) = clean["utterances"]
    assert utterance["intent"] == "ReadStory" and clean["passed"]
    assert utterance["commit_latency_ms"] > 0
    assert utterance["speech_start_s"] < utterance["speech_end_s"] <= clean["audio_s"]
    twice = runs["twice", "clean"]  # two clips joined by silence: two utterances, in order
    assert [u["intent"] for u in twice["utterances"]] == ["ReadStory", "ReadStory"]
    assert twice["utterances"][0]["speech_end_s"] < twice["utterances"][1]["speech_start_s"]
    summary = report["summary"]
    assert summary["by_augmentation"]["clean"]["accuracy"] == 1.0
    assert summary["by_augmentation"]["white 20 dB"]["accuracy"] < 1.0
    assert summary["p95_commit_ms"] is not None


def test_the_junit_report_is_valid_junit_xml(one_job):
    import xmlschema

    schema = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))
    path = one_job[1] / "r.xml"
    schema.validate(path)
    tree = schema.to_dict(path)
    suite = tree["testsuite"][0]
    report = json.loads((one_job[1] / "r.json").read_text("utf-8"))
    assert (suite["@tests"], suite["@failures"]) == (4, report["summary"]["failed"])
    failed = [c for c in suite["testcase"] if "failure" in c]
    assert {c["@name"] for c in failed} == {"white 20 dB"}


def test_the_html_page_renders_in_headless_chromium(one_job, tmp_path):
    import matplotlib.pyplot as plt

    if shutil.which("chromium") is None:
        pytest.fail("chromium is not installed; run 'bash scripts/install.sh --test'")
    page = one_job[1] / "page" / "index.html"
    assert {p.name for p in page.parent.glob("*.png")} >= {"accuracy.png", "latency.png"}
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
    )
    pixels = plt.imread(shot)[..., :3]
    assert pixels.shape[:2] == (900, 1200)
    # not blank: plenty of non-white pixels, and the plots' colours among them
    assert (pixels.min(axis=2) < 0.9).mean() > 0.02
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


def test_the_baseline_catches_the_injected_regression(two_jobs):
    done, out = two_jobs
    assert done.returncode == 1
    accuracy = json.loads((out / "r.json").read_text("utf-8"))["summary"]["accuracy"]
    assert f"REGRESSION accuracy (overall) 100.0% -> {accuracy:.1%}" in done.stdout
    assert "REGRESSION accuracy (white 20 dB) 100.0% ->" in done.stdout
    assert "REGRESSION accuracy (clean)" not in done.stdout
    assert "REGRESSION p95 commit latency (overall)" in done.stdout
    assert "changed: now fails: m.yaml: picovoice_leopard_test_ko [white 20 dB]" in done.stdout


def test_two_workers_give_the_same_results_as_one(one_job, two_jobs):
    def results(path: Path) -> list:
        report = json.loads(path.read_text("utf-8"))
        return [
            (
                r["fixture"],
                r["augmentation"],
                r["passed"],
                r["cer"],
                [
                    (u["transcript"], u["intent"], u["speech_start_s"], u["speech_end_s"])
                    for u in r["utterances"]
                ],
            )
            for r in report["runs"]
        ]

    assert results(two_jobs[1] / "r.json") == results(one_job[1] / "r.json")
    assert json.loads((two_jobs[1] / "r.json").read_text("utf-8"))["jobs"] == 2


def test_compare_passes_a_run_against_itself_and_lists_flips(one_job):
    report = json.loads((one_job[1] / "r.json").read_text("utf-8"))
    assert compare(report, report, Tolerances()) == ([], [])
    older = copy.deepcopy(report)
    older["runs"][0]["passed"] = False
    regressions, changes = compare(older, report, Tolerances())
    assert regressions == [] and changes[0].startswith("now passes: m.yaml:")
