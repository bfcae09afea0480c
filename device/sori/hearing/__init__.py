"""Hearing, in the order sound meets it: audio in (capture, echo cancellation,
denoising), voice activity, wake phrase, speech-to-text, and the pipeline that commits
a turn's words to an intent."""
