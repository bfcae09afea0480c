"""The fixture manifest of `sori test`: which recordings, what each must do, under which
room conditions. Read once, checked field by field, so that a typo stops the run with the
fixture and field it sits in, before any model loads.

    defaults: {home: home.yaml, config: sori.toml, max_commit_ms: 100, max_cer: 0.3}
    fixtures:
      - audio: clips/living_off.wav
        expect: {intent: HassTurnOff, slots: {name: 거실 조명}}
      - audio: [clips/on.wav, clips/off.wav]      # joined with gap_s of silence
        expect: [{intent: HassTurnOn}, {intent: HassTurnOff}]   # one per utterance
    augment:
      - {noise: white, snr_db: [20, 10]}
      - {reverb: room}
      - {room: {rt60: 0.4, distance_m: 2, interferer: babble, snr_db: 5, mics: 4, lead_s: 1}}
    tolerances: {accuracy_drop: 0.0, p95_commit_ms_rise: 50}

Paths are relative to the manifest, or absolute. Every number goes through the config's
own check (`sori.core.config.schema.read_number`: finite, in range). The YAML is read with
limits (`sori.core.bounded_yaml`): no aliases (`*name`), which a manifest never needs
since `defaults` carries what fixtures share, bounded nesting and a bounded size.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sori.core.bounded_yaml import one_line, read_bounded
from sori.core.config.schema import NumberError, allowed, dotted, limits, read_number, shown
from sori.core.errors import SoriError
from sori.hearing.audio.augment import NOISE_KINDS, ROOMS_RT60_S
from sori.hearing.audio.room import DISTANCE_M, LEAD_S, MAX_MICS, RT60_S, RoomSetup

NOISES = (*NOISE_KINDS, "babble")
TIERS = ("preset", "local", "edge", "none")
"""Who answered a turn. Without --act only "preset" (a preset intent committed) or "none"
(nothing did; the turn would fall through to the language-model tiers) can be seen; with
--act the daemon's thinking tiers answer too."""
DEFAULT_MAX_CER = 0.3
"""Character error rate a transcript may have by default (spaces not counted)."""
DEFAULT_GAP_S = 1.5
"""Silence between the clips of a fixture made of several, in seconds."""
MAX_BYTES = 1 << 20
"""Largest manifest read, in bytes (5,000 fixtures take about 500 KB)."""
MAX_VALUES = 50_000
"""Most values (keys, scalars, lists, mappings) a manifest may hold; 5,000 fixtures hold
about 40,000, which PyYAML reads in under 2 s and 100 MB."""
MAX_DEPTH = 16
"""Deepest nesting of mappings and lists; a manifest needs 6."""

_SHARE = limits(0, 1)
"""A share or a rate: character error rate, accuracy drop."""
_COMMIT_MS = limits(0)
_GAP_S = limits(0, 30)
_GAIN_DB = limits(-60, 40)
_SPEED = limits(0.5, 2.0)
"""Playback speed factors; the resampler's work and output grow as the factor shrinks."""
_SNR_DB = limits(-20, 80)

_DEFAULT_KEYS = {"home", "config", "max_commit_ms", "max_cer", "gap_s"}
_FIXTURE_KEYS = {"audio", "expect", "name"}
_EXPECT_KEYS = {"intent", "slots", "transcript", "max_cer", "no_action", "max_commit_ms", "tier"}
_AUGMENT_KEYS = {"noise", "snr_db", "gain_db", "speed", "reverb", "room"}
_ROOM_KEYS = {"rt60", "distance_m", "mics", "interferer", "snr_db", "lead_s"}
_RT60_S = limits(*RT60_S)
_DISTANCE_M = limits(*DISTANCE_M)
_MICS = limits(1, MAX_MICS)
_LEAD_S = limits(*LEAD_S)
_TOLERANCE_KEYS = {"accuracy_drop", "p95_commit_ms_rise"}


class ManifestError(SoriError):
    """A fixture manifest that cannot be run; the message names the file, fixture and field."""


@dataclass(frozen=True)
class Expectation:
    """What one utterance (or a whole one-request fixture) must do."""

    intent: str | None = None
    """The intent that must be committed; None: not checked."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slots that must be present with these values (Home Assistant's comparison: extra
    slots are allowed; a name or area agrees when it names the same entity)."""
    transcript: str | None = None
    """The words that must be heard, within `max_cer`; None: not checked."""
    max_cer: float = DEFAULT_MAX_CER
    """Largest character error rate of the transcript, spaces ignored (0 to 1)."""
    no_action: bool = False
    """True: no command intent may be committed (queries and nothing-intents may)."""
    max_commit_ms: float | None = None
    """Largest commit latency from the end of speech, in milliseconds; None: unchecked."""
    tier: str | None = None
    """Who must answer: "preset", "local", "edge" (these two need --act) or "none"."""


@dataclass(frozen=True)
class Fixture:
    """One recording (or several joined) and its expectations."""

    index: int
    """Position in the manifest's `fixtures`, from 0 (errors and reports name it)."""
    name: str
    """What reports call it: `name:` or the audio file names."""
    audio: tuple[Path, ...]
    """The clip, or the clips joined with `gap_s` of silence between them."""
    expect: tuple[Expectation, ...]
    """One per utterance in order (`per_utterance`), or one for the whole fixture."""
    per_utterance: bool
    """True when `expect` was a list: utterance i must meet expect[i], counts equal."""
    gap_s: float = DEFAULT_GAP_S
    """Silence between joined clips, in seconds."""


@dataclass(frozen=True)
class Augmentation:
    """One room condition: applied in the order speed, reverb, gain, noise."""

    name: str
    """What reports call it ("clean", "white 10 dB", "reverb room")."""
    noise: str | None = None
    """Noise kind (white, pink, brown, hum, babble); None: no noise."""
    snr_db: float | None = None
    """Speech-to-noise ratio of the added noise, in dB."""
    gain_db: float = 0.0
    """Level change, in dB (negative: a quieter talker)."""
    speed: float = 1.0
    """Playback speed factor (1.1: ten percent faster and shorter)."""
    reverb: str | None = None
    """Synthetic room name (`ROOMS_RT60_S`); None: dry."""
    room: RoomSetup | None = None
    """A simulated room (sori.hearing.audio.room) in place of `reverb`, with `noise` its
    interferer, at `snr_db` at the first microphone; more than one microphone makes the
    run a microphone array's recording. None: no simulated room."""


CLEAN = Augmentation("clean")


@dataclass(frozen=True)
class Tolerances:
    """How much worse than a baseline run a run may be before it fails."""

    accuracy_drop: float = 0.0
    """Largest drop in the share of passing runs (0 to 1), overall or per augmentation."""
    p95_commit_ms_rise: float = 50.0
    """Largest rise of the 95th percentile commit latency, in milliseconds."""


@dataclass(frozen=True)
class Manifest:
    path: Path
    """The manifest file."""
    home: Path | None
    """Home Assistant test-fixture YAML, or a Sori TOML whose [home] is used; None: the
    config's own home."""
    config: Path | None
    """Sori TOML config; None: the default config."""
    fixtures: tuple[Fixture, ...]
    augmentations: tuple[Augmentation, ...]
    """The clean original first, then every augmentation (an snr_db list expanded)."""
    tolerances: Tolerances = Tolerances()


def load_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest; ManifestError names the fixture and field at fault."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such manifest") from None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise ManifestError(
            f"{path}: larger than {MAX_BYTES >> 20} MiB; a manifest lists fixtures, "
            "not their audio: split it in several"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    data = read_yaml(text, path)
    where = _Where(path)
    if not isinstance(data, dict):
        raise where.error("", "must be a mapping with 'fixtures' (and 'defaults', 'augment')")
    where.unknown(data, {"defaults", "fixtures", "augment", "tolerances"}, "")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise where.error("defaults", "must be a mapping")
    where.unknown(defaults, _DEFAULT_KEYS, "defaults")
    home = where.file(defaults["home"], "defaults.home") if "home" in defaults else None
    config = where.file(defaults["config"], "defaults.config") if "config" in defaults else None
    base = Expectation(
        max_cer=where.number(defaults.get("max_cer", DEFAULT_MAX_CER), "defaults.max_cer", _SHARE),
        max_commit_ms=where.number(defaults["max_commit_ms"], "defaults.max_commit_ms", _COMMIT_MS)
        if "max_commit_ms" in defaults
        else None,
    )
    gap_s = where.number(defaults.get("gap_s", DEFAULT_GAP_S), "defaults.gap_s", _GAP_S)
    fixtures = data.get("fixtures")
    if not isinstance(fixtures, list) or not fixtures:
        raise where.error("fixtures", "must be a non-empty list of {audio, expect}")
    return Manifest(
        path=path,
        home=home,
        config=config,
        fixtures=tuple(where.fixture(i, f, base, gap_s) for i, f in enumerate(fixtures)),
        augmentations=(CLEAN, *where.augmentations(data.get("augment") or [])),
        tolerances=where.tolerances(data.get("tolerances") or {}),
    )


def check_intents(manifest: Manifest, known: Iterable[str]) -> None:
    """Every expected intent is one the packs can produce, or ManifestError naming it."""
    known = sorted(set(known))
    for fixture in manifest.fixtures:
        for j, expect in enumerate(fixture.expect):
            if expect.intent is not None and expect.intent not in known:
                near = difflib.get_close_matches(expect.intent, known, n=1)
                hint = f"; did you mean {near[0]}?" if near else "; see `sori intent --list`"
                field_name = f"expect[{j}].intent" if fixture.per_utterance else "expect.intent"
                raise ManifestError(
                    f"{manifest.path}: fixtures[{fixture.index}].{field_name}: unknown intent "
                    f"{expect.intent!r}{hint}"
                )


def read_yaml(text: str, path: Path) -> Any:
    """The YAML text of the manifest at `path` as Python values, by `yaml.safe_load`'s
    rules but without aliases, nesting past MAX_DEPTH or more than MAX_VALUES values; a
    ManifestError naming the line at fault otherwise."""
    try:
        return read_bounded(text, MAX_DEPTH, MAX_VALUES)
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path}: {one_line(exc, text)}") from None


class _Where:
    """Checks fields of one manifest file, raising errors that say where."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, field_name: str, message: str) -> ManifestError:
        at = f"{self.path}: {field_name}: " if field_name else f"{self.path}: "
        return ManifestError(at + message)

    def unknown(self, data: dict, known: set[str], at: str) -> None:
        for key in data:
            if key not in known:
                raise self.error(
                    dotted(at, key), f"unknown field; expected one of {', '.join(sorted(known))}"
                )

    def file(self, value: Any, at: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.error(at, "must be a file path (text)")
        resolved = Path(value) if Path(value).is_absolute() else self.path.parent / value
        try:
            found = resolved.is_file()
        except OSError as exc:  # a name too long, a loop of links
            raise self.error(at, f"cannot use {shown(value)} ({exc.strerror})") from None
        if not found:
            raise self.error(
                at, f"no such file {str(resolved)!r} (paths are relative to the manifest)"
            )
        return resolved

    def number(self, value: Any, at: str, meta: dict[str, Any]) -> float:
        try:
            return read_number(value, meta)
        except NumberError as exc:
            raise self.error(at, str(exc)) from None

    def choice(self, value: Any, options: Iterable[str], at: str) -> Any:
        """`value` when it is None or one of `options`; an error naming them otherwise."""
        options = tuple(options)
        if value is None or (isinstance(value, str) and value in options):
            return value
        raise self.error(at, f"must be {allowed(limits(choices=options))}, got {shown(value)}")

    def fixture(self, i: int, data: Any, base: Expectation, gap_s: float) -> Fixture:
        at = f"fixtures[{i}]"
        if not isinstance(data, dict):
            raise self.error(at, "must be a mapping with 'audio' and 'expect'")
        self.unknown(data, _FIXTURE_KEYS, at)
        if "audio" not in data:
            raise self.error(f"{at}.audio", "missing; give the WAV/FLAC file (or a list of them)")
        clips = data["audio"] if isinstance(data["audio"], list) else [data["audio"]]
        if not clips:
            raise self.error(f"{at}.audio", "must name at least one file")
        audio = tuple(
            self.file(c, f"{at}.audio" + (f"[{k}]" if isinstance(data["audio"], list) else ""))
            for k, c in enumerate(clips)
        )
        if "expect" not in data:
            raise self.error(f"{at}.expect", "missing; say what the fixture must do")
        raw = data["expect"]
        if isinstance(raw, list):
            if not raw:
                raise self.error(
                    f"{at}.expect", "an empty list expects nothing; give one per utterance"
                )
            expect = tuple(
                self.expectation(e, f"{at}.expect[{j}]", base) for j, e in enumerate(raw)
            )
        else:
            expect = (self.expectation(raw, f"{at}.expect", base),)
        name = data.get("name")
        if name is not None and (isinstance(name, bool) or not isinstance(name, str | int | float)):
            raise self.error(f"{at}.name", f"must be text, got {shown(name)}")
        name = name or "+".join(p.stem for p in audio)
        return Fixture(i, str(name), audio, expect, isinstance(raw, list), gap_s)

    def expectation(self, data: Any, at: str, base: Expectation) -> Expectation:
        if not isinstance(data, dict) or not data:
            raise self.error(
                at, "must be a mapping such as {intent: HassTurnOn} or {transcript: ...}"
            )
        self.unknown(data, _EXPECT_KEYS, at)
        intent = data.get("intent")
        if intent is not None and (not isinstance(intent, str) or not intent):
            raise self.error(f"{at}.intent", "must be an intent name such as HassTurnOn")
        slots = data.get("slots") or {}
        if not isinstance(slots, dict):
            raise self.error(f"{at}.slots", "must be a mapping of slot name to value")
        for name, value in slots.items():
            if isinstance(value, dict | list) or value is None:
                raise self.error(dotted(f"{at}.slots", name), "must be text or a number")
        if slots and intent is None:
            raise self.error(f"{at}.slots", "slots need an intent beside them")
        transcript = data.get("transcript")
        if transcript is not None and not isinstance(transcript, str):
            raise self.error(f"{at}.transcript", "must be text")
        no_action = data.get("no_action", False)
        if not isinstance(no_action, bool):
            raise self.error(f"{at}.no_action", "must be true or false")
        if no_action and intent is not None:
            raise self.error(f"{at}.no_action", "contradicts 'intent'; give one or the other")
        return Expectation(
            intent=intent,
            slots=dict(slots),
            transcript=transcript,
            max_cer=self.number(data["max_cer"], f"{at}.max_cer", _SHARE)
            if "max_cer" in data
            else base.max_cer,
            no_action=no_action,
            max_commit_ms=self.number(data["max_commit_ms"], f"{at}.max_commit_ms", _COMMIT_MS)
            if "max_commit_ms" in data
            else base.max_commit_ms,
            tier=self.choice(data.get("tier"), TIERS, f"{at}.tier"),
        )

    def augmentations(self, data: Any) -> list[Augmentation]:
        if not isinstance(data, list):
            raise self.error("augment", "must be a list such as [{noise: white, snr_db: 10}]")
        out: list[Augmentation] = []
        for i, entry in enumerate(data):
            at = f"augment[{i}]"
            if not isinstance(entry, dict) or not entry:
                raise self.error(at, "must be a mapping such as {noise: white, snr_db: 10}")
            self.unknown(entry, _AUGMENT_KEYS, at)
            if "room" in entry:
                out.append(self.room(entry, at))
                continue
            noise = self.choice(entry.get("noise"), NOISES, f"{at}.noise")
            if (noise is None) != ("snr_db" not in entry):
                raise self.error(at, "'noise' and 'snr_db' go together")
            snrs = entry.get("snr_db")
            snrs = snrs if isinstance(snrs, list) else [snrs]
            if not snrs:
                raise self.error(f"{at}.snr_db", "an empty list; give one SNR or more")
            reverb = self.choice(entry.get("reverb"), ROOMS_RT60_S, f"{at}.reverb")
            gain = self.number(entry.get("gain_db", 0.0), f"{at}.gain_db", _GAIN_DB)
            speed = self.number(entry.get("speed", 1.0), f"{at}.speed", _SPEED)
            for k, snr in enumerate(snrs):
                value = None
                if noise is not None:
                    where = f"{at}.snr_db" + (f"[{k}]" if isinstance(entry["snr_db"], list) else "")
                    value = self.number(snr, where, _SNR_DB)
                out.append(
                    Augmentation(
                        _name(noise, value, gain, speed, reverb and f"reverb {reverb}"),
                        noise,
                        value,
                        gain,
                        speed,
                        reverb,
                    )
                )
        seen = {CLEAN.name}  # the clean original always runs
        for augmentation in out:
            if augmentation.name in seen:
                raise self.error("augment", f"{augmentation.name!r} is listed twice")
            seen.add(augmentation.name)
        return out

    def room(self, entry: dict, at: str) -> Augmentation:
        """An augmentation with a simulated room: `entry["room"]` holds its interferer."""
        for key in ("reverb", "noise", "snr_db"):
            if key in entry:
                raise self.error(
                    f"{at}.{key}",
                    "does not go with 'room', which simulates its own reverberation; give "
                    "the noise as the room's interferer: {room: {interferer: babble, snr_db: 5}}",
                )
        data, where = entry["room"], f"{at}.room"
        if not isinstance(data, dict):
            raise self.error(where, "must be a mapping such as {rt60: 0.4, distance_m: 2, mics: 4}")
        self.unknown(data, _ROOM_KEYS, where)
        interferer = self.choice(data.get("interferer"), NOISES, f"{where}.interferer")
        if (interferer is None) != ("snr_db" not in data):
            raise self.error(where, "'interferer' and 'snr_db' go together")
        if "lead_s" in data and interferer is None:
            raise self.error(
                f"{where}.lead_s", "is how long the interferer plays first: give 'interferer'"
            )
        snr = None
        if interferer is not None:
            snr = self.number(data["snr_db"], f"{where}.snr_db", _SNR_DB)
        base = RoomSetup()
        try:
            mics = int(read_number(data.get("mics", base.mics), _MICS, integer=True))
        except NumberError as exc:
            raise self.error(f"{where}.mics", str(exc)) from None
        setup = RoomSetup(
            rt60_s=self.number(data.get("rt60", base.rt60_s), f"{where}.rt60", _RT60_S),
            distance_m=self.number(
                data.get("distance_m", base.distance_m), f"{where}.distance_m", _DISTANCE_M
            ),
            mics=mics,
            lead_s=self.number(data.get("lead_s", base.lead_s), f"{where}.lead_s", _LEAD_S),
        )
        gain = self.number(entry.get("gain_db", 0.0), f"{at}.gain_db", _GAIN_DB)
        speed = self.number(entry.get("speed", 1.0), f"{at}.speed", _SPEED)
        name = _name(interferer, snr, gain, speed, _room_name(setup), setup.lead_s)
        return Augmentation(name, interferer, snr, gain, speed, room=setup)

    def tolerances(self, data: Any) -> Tolerances:
        if not isinstance(data, dict):
            raise self.error("tolerances", "must be a mapping such as {accuracy_drop: 0.0}")
        self.unknown(data, _TOLERANCE_KEYS, "tolerances")
        base = Tolerances()
        return Tolerances(
            accuracy_drop=self.number(
                data.get("accuracy_drop", base.accuracy_drop), "tolerances.accuracy_drop", _SHARE
            ),
            p95_commit_ms_rise=self.number(
                data.get("p95_commit_ms_rise", base.p95_commit_ms_rise),
                "tolerances.p95_commit_ms_rise",
                _COMMIT_MS,
            ),
        )


def _room_name(setup: RoomSetup) -> str:
    mics = "1 mic" if setup.mics == 1 else f"{setup.mics} mics"
    return f"room RT60 {setup.rt60_s:g} s at {setup.distance_m:g} m, {mics}"


def _name(
    noise: str | None,
    snr: float | None,
    gain: float,
    speed: float,
    room: str | None,
    lead_s: float = 0.0,
) -> str:
    """What reports call an augmentation; `room` is the reverberation's part of it, and
    `lead_s` how long its interferer plays first."""
    parts = []
    if speed != 1.0:
        parts.append(f"speed {speed:g}")
    if room:
        parts.append(room)
    if gain:
        parts.append(f"gain {gain:+g} dB")
    if noise:
        parts.append(f"{noise} {snr:g} dB" + (f" on {lead_s:g} s first" if lead_s else ""))
    return ", ".join(parts) or "clean"
