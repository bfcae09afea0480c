"""Streaming speech-to-text: the interface (`base.py`) and one backend per file
(`vosk.py`, the embedded default; `sherpa.py`, sherpa-onnx transducers for devices).
Backends import their libraries lazily; pick one by name with
`sori.assemble.hearing.build_recognizer`."""
